#!/usr/bin/env bash
# http_fork_test.sh: a program serving the HTTP endpoint forks. The child
# never holds the parent's sockets (so it can never answer on the parent's
# port, and the port is free once the parent exits), the parent keeps
# serving, and both exit cleanly with the output of a plain run. With
# fork=follow and http=0 the child starts an endpoint of its own at its
# first sample, on another port, announced in its own port file (%p);
# with fork=stop it serves nothing. Only the parent prints "serving on", and
# a port file goes away with its endpoint. (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/http_endpoints_test.sh"

# socket_links PID: the socket inodes among PID's descriptors, sorted.
socket_links() {
	find "/proc/$1/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | sort
}

for mode in follow stop; do
	name=fk_$mode
	# Port files named by pid (the later http_portfile= wins): the
	# parent's, and the child's own in follow mode.
	start_prog "$name" "fork=$mode,http_portfile=$HTMP/$name.%p.port" fork
	pid=$PID
	child=
	for i in $(seq 50); do
		child=$(awk '$1 == "child" { print $2 }' "$HTMP/$name.err")
		[ -n "$child" ] && break
		sleep 0.1
	done
	[ -n "$child" ] || fail "$mode: the child did not report its pid"
	parent=$(awk '/^PPid:/ { print $2 }' "/proc/$child/status")
	ADDR=$(cat "$HTMP/$name.$parent.port")
	code=$(fetch /metrics "$HTMP/$name.m")
	[ "$code" = 200 ] || fail "$mode: parent answers $code after the fork"
	if [ "$mode" = follow ]; then
		# The child churns, so its first sample comes within a second.
		for i in $(seq 50); do
			[ -s "$HTMP/$name.$child.port" ] && break
			sleep 0.1
		done
		[ -s "$HTMP/$name.$child.port" ] || fail "follow: the child serves nothing"
		caddr=$(cat "$HTMP/$name.$child.port")
		[ "$caddr" != "$ADDR" ] || fail "follow: child and parent share $ADDR"
		code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "http://$caddr/metrics")
		[ "$code" = 200 ] || fail "follow: the child's endpoint answers $code"
		# The child announces itself in its port file only: one
		# "serving on" line per run, not one per child.
		! grep -q "serving on $caddr" "$HTMP/$name.err" ||
			fail "follow: the child printed 'serving on' too"
		[ "$(grep -c 'serving on' "$HTMP/$name.err")" = 1 ] ||
			fail "follow: not exactly one 'serving on' line: $(cat "$HTMP/$name.err")"
	else
		sleep 0.3
		[ -z "$(socket_links "$child")" ] || fail "stop: the child holds sockets"
		[ "$(ls "$HTMP"/"$name".*.port | wc -l)" = 1 ] || fail "stop: a child port file"
	fi
	shared=$(comm -12 <(socket_links "$parent") <(socket_links "$child"))
	[ -z "$shared" ] || fail "$mode: the child holds the parent's socket(s) $shared"
	stop_prog "$name" "$pid"
	[ ! -e "$HTMP/$name.$parent.port" ] ||
		fail "$mode: the parent's port file outlived its endpoint"
	# The parent closed its socket at exit: the port is free again.
	if (exec 3<>"/dev/tcp/${ADDR%:*}/${ADDR##*:}") 2>/dev/null; then
		fail "$mode: something still listens on $ADDR"
	fi
done
echo "http fork: ok"
