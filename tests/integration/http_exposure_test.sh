#!/usr/bin/env bash
# http_exposure_test.sh: what the HTTP endpoint shows, and to whom.
# http= on a non-loopback address (0.0.0.0, [::], a routable one) is refused
# with one line saying why unless http_public=1; a bad http= value gets a
# message that is not cut mid-sentence; a port-file failure is called a
# port-file failure; with fork=follow and http=0 the forked children of a
# program print no "serving on" of their own and leave no port file when
# the name has no %p. (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/preload_smoke_test.sh"
P=$AP_PROGDIR

run_true() { # OPTIONS: /bin/true under the runtime; stderr in $TMP/err
	timeout --kill-after=5 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="dump_at_exit=0,$1" \
		/bin/true 2>"$TMP/err" || fail "'$1': true failed"
}

for addr in 0.0.0.0:0 '[::]:0' 192.0.2.1:0; do
	run_true "http=$addr"
	[ "$(wc -l <"$TMP/err")" = 1 ] || fail "http=$addr: not one line: $(cat "$TMP/err")"
	grep -q "not a loopback address.*http_public=1.*the endpoint is off" "$TMP/err" ||
		fail "http=$addr: no refusal: $(cat "$TMP/err")"
done
# Allowed when asked for (0.0.0.0 always binds).
run_true "http=0.0.0.0:0,http_public=1"
grep -q '^allocprof: serving on 0\.0\.0\.0:[0-9]*$' "$TMP/err" ||
	fail "http_public=1: not served: $(cat "$TMP/err")"
# Loopback needs nothing.
run_true "http=127.0.0.2:0"
grep -q '^allocprof: serving on 127\.0\.0\.2:' "$TMP/err" || fail "127.0.0.2: $(cat "$TMP/err")"

# A bad value: the whole explanation, ending "or off (default kept)".
run_true "http=1.2.3.4:99999"
grep -q 'or off (default kept)$' "$TMP/err" || fail "http= message cut: $(cat "$TMP/err")"

# A port file that cannot be written is called that.
run_true "http=0,http_portfile=/nonexistent-dir/x.port"
grep -q 'cannot write port file /nonexistent-dir/x.port' "$TMP/err" ||
	fail "port file failure: $(cat "$TMP/err")"

# fork=follow, http=0, port file without %p: the forked child serves
# nothing (no one could find it), so one "serving on" (the parent's), and
# the port file is gone once the parent has exited.
timeout --kill-after=5 60 env LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="http=0,http_portfile=$TMP/fk.port,output=$TMP/fk.%p.pb.gz,rate=4096" \
	"$P/http_workload" "$TMP/fk.stop" 50 fork >"$TMP/fk.out" 2>"$TMP/fk.err" &
pid=$!
for i in $(seq 100); do
	[ -s "$TMP/fk.port" ] && grep -q '^child ' "$TMP/fk.err" && break
	sleep 0.1
done
sleep 1 # the child churns: time for its first samples
touch "$TMP/fk.stop"
wait "$pid" || fail "http_workload fork failed: $(cat "$TMP/fk.err")"
[ "$(grep -c 'serving on' "$TMP/fk.err")" = 1 ] ||
	fail "fork: not one 'serving on' line: $(cat "$TMP/fk.err")"
[ ! -e "$TMP/fk.port" ] || fail "fork: the port file outlived the endpoint"
echo "http exposure: ok"
