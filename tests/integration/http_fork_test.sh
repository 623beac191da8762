#!/usr/bin/env bash
# http_fork_test.sh: a program serving the HTTP endpoint forks (fork=follow
# and fork=stop). The child must not hold the parent's listening socket
# (no socket among its descriptors, so it can never answer on the parent's
# port, and the port is free once the parent exits), the parent keeps
# serving, and both exit cleanly with the output of a plain run.
# (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/http_endpoints_test.sh"

for mode in follow stop; do
	start_prog "fk_$mode" "fork=$mode" fork
	pid=$PID
	child=
	for i in $(seq 50); do
		child=$(awk '$1 == "child" { print $2 }' "$HTMP/fk_$mode.err")
		[ -n "$child" ] && break
		sleep 0.1
	done
	[ -n "$child" ] || fail "$mode: the child did not report its pid"
	sleep 0.2
	sockets=$(find "/proc/$child/fd" -lname 'socket:*' 2>/dev/null | wc -l)
	[ "$sockets" = 0 ] || fail "$mode: the child holds $sockets socket(s)"
	code=$(fetch /metrics "$HTMP/fk_$mode.m")
	[ "$code" = 200 ] || fail "$mode: parent answers $code after the fork"
	stop_prog "fk_$mode" "$pid"
	# The parent closed its socket at exit: the port is free again.
	if (exec 3<>"/dev/tcp/${ADDR%:*}/${ADDR##*:}") 2>/dev/null; then
		fail "$mode: something still listens on $ADDR"
	fi
done
echo "http fork: ok"
