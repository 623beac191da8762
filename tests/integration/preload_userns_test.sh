#!/usr/bin/env bash
# preload_userns_test.sh: unshare(CLONE_NEWUSER), and setns() into a user
# or a mount namespace, need a single-threaded process; the runtime's own
# threads (the dumper's, on by default for dump_on=; the HTTP endpoint's)
# made them fail with EINVAL in every profiled program: rootless
# containers, sandboxes, `unshare -r`, nsenter. The runtime stops its
# threads around those calls (src/preload/procs.c). progs/userns makes
# each call with 400 allocations before and 600 after; at rate 1 the
# profile must count both exactly, and the program must behave as it does
# alone. With http= on, the endpoint must serve again afterwards; with
# push= on, its sending thread is stopped too. A vfork
# child's unshare (it shares the parent's memory, threads' state included)
# must leave the parent's threads alone.
# Skipped where the calls need privileges this machine does not give.
# (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/userns
[ -x "$PROG" ] || fail "not built: $PROG"

# A port nothing listens on, for push=.
dead_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ran=0
for mode in unshare setns_user vfork_unshare setns_mnt setns_net; do
	st=0
	bounded 30 "$PROG" "$mode" >"$TMP/$mode.plain" 2>&1 || st=$?
	if [ $st = 77 ]; then
		echo "note: $mode needs privileges this machine does not give: $(cat "$TMP/$mode.plain")"
		continue
	fi
	[ $st = 0 ] || fail "$mode fails alone: $(cat "$TMP/$mode.plain")"
	# push= to a port nothing listens on: its sender is a thread too
	# (its deliveries fail, which it says once).
	for opts in "" ",http=127.0.0.1:0,http_portfile=$TMP/$mode.port" \
		",push=http://127.0.0.1:$dead_port/ingest,push_interval=100ms"; do
		rm -f "$TMP/$mode".*.pb.gz
		st=0
		bounded 30 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=1,output=$TMP/$mode.%p.pb.gz$opts" \
			"$PROG" "$mode" >"$TMP/$mode.out" 2>"$TMP/$mode.err" || st=$?
		[ $st = 0 ] || fail "$mode ($opts): exit status $st under the runtime: $(head -3 "$TMP/$mode.err")"
		[ "$(cat "$TMP/$mode.out")" = ok ] || fail "$mode ($opts): printed $(cat "$TMP/$mode.out")"
		f=$(ls "$TMP/$mode".*.pb.gz 2>/dev/null | head -1)
		[ -n "$f" ] || fail "$mode ($opts): no profile: $(head -3 "$TMP/$mode.err")"
		b=$(objects_of "$f" before_ns)
		a=$(objects_of "$f" after_ns)
		[ "$b" = 400 ] && [ "$a" = 600 ] ||
			fail "$mode ($opts): before_ns $b and after_ns $a objects, want 400 and 600"
		if [ "${opts#,http}" != "$opts" ]; then
			# Stopped and started again; but the vfork child's
			# call leaves the parent's endpoint alone, and so does
			# joining a network namespace (asked with type 0: the
			# runtime asks the kernel the type).
			want=2
			[ "$mode" != vfork_unshare ] && [ "$mode" != setns_net ] || want=1
			[ "$(grep -c 'serving on' "$TMP/$mode.err")" = $want ] ||
				fail "$mode ($opts): want $want 'serving on' lines: $(cat "$TMP/$mode.err")"
		fi
	done
	ran=$((ran + 1))
done
[ $ran -gt 0 ] || skip "no namespace call is permitted here"
# The command-line tool itself, as users run it.
if unshare -r true 2>/dev/null; then
	bounded 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="output=$TMP/cmd.%p.pb.gz" \
		unshare -r true 2>"$TMP/cmd.err" || fail "unshare -r true fails under the runtime: $(cat "$TMP/cmd.err")"
fi
echo "preload userns: ok"
