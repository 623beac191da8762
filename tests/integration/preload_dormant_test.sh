#!/usr/bin/env bash
# preload_dormant_test.sh: a runtime started dormant (rate=off, or
# start_on=SIG) samples nothing until it is turned on, then only what is
# allocated after that, exactly at rate 1: by a signal (start_on=SIGUSR2),
# by POST /debug/allocprof/start?rate=1 over HTTP, and off again with
# POST /debug/allocprof/stop. A dormant runtime that is never started
# writes no profile at exit. (AP_TEST_PRELOAD: needs the runtime; skipped
# in sanitizer builds.)
set -euo pipefail
. "$(dirname "$0")/preload_smoke_test.sh"
PROG=$AP_PROGDIR/dormant
[ -x "$PROG" ] || fail "test program not built: $PROG"
command -v python3 >/dev/null || skip "python3 is not installed"

# check_after PROFILE: the alloc view has after_start at exactly 37 x 777
# bytes and no before_start (its 100 x 1000 bytes came before the start).
check_after() {
	"$CLI" report --alloc --json "$1" >"$TMP/r.json" || fail "report of $1"
	python3 - "$TMP/r.json" <<'EOF' || fail "$1: wrong sites (above)"
import json, sys
r = json.load(open(sys.argv[1]))
by = {s["function"]: s for s in r["sites"]}
a = by.get("after_start")
if not a or a["bytes"] != 37 * 777 or a["objects"] != 37:
    sys.exit("after_start: %r" % (a and (a["bytes"], a["objects"])))
if "before_start" in by:
    sys.exit("before_start sampled while dormant: %r" % by["before_start"]["bytes"])
EOF
}

# 1. start_on=SIGUSR2: the program raises it itself, then waits until the
# runtime reports sampling on.
out=$(bounded 30 env LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="rate=1,start_on=SIGUSR2,output=$TMP/sig.pb.gz" \
	"$PROG" signal) || fail "signal run: exit $?"
[ "$out" = "after 37 28749" ] || fail "signal run printed '$out'"
check_after "$TMP/sig.pb.gz"

# 1b. the same with the allocations in a second thread, whose counter was
# parked while dormant and must be re-armed by the start.
out=$(bounded 30 env LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="rate=1,start_on=SIGUSR2,output=$TMP/thr.pb.gz" \
	"$PROG" thread) || fail "thread run: exit $?"
[ "$out" = "after 37 28749" ] || fail "thread run printed '$out'"
check_after "$TMP/thr.pb.gz"

# 2. rate=off, never started: no profile at exit, same output as alone.
st=0
bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=off,output=$TMP/never.pb.gz" \
	"$PROG" wait 1000 >"$TMP/never.out" 2>"$TMP/never.err" </dev/null || st=$?
[ "$st" = 3 ] || fail "never started: exit $st, expected 3 (sampling never on)"
[ ! -e "$TMP/never.pb.gz" ] || fail "a dormant runtime never started wrote a profile"

# 3. HTTP: rate=off, then POST start?rate=1; GET is refused; stop works.
command -v curl >/dev/null || skip "curl is not installed"
# start_http NAME MODE: the program dormant with an endpoint; sets pid, addr.
start_http() {
	bounded 60 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=off,http=0,http_portfile=$TMP/$1.port,output=$TMP/$1.pb.gz" \
		"$PROG" "$2" >"$TMP/$1.out" 2>"$TMP/$1.err" </dev/null &
	pid=$!
	for _ in $(seq 100); do
		[ -s "$TMP/$1.port" ] && break
		sleep 0.1
	done
	[ -s "$TMP/$1.port" ] || fail "no port file: $(cat "$TMP/$1.err")"
	addr=$(cat "$TMP/$1.port")
}
start_http http wait
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/debug/allocprof/start")
[ "$code" = 405 ] || fail "GET start answered $code, expected 405"
code=$(curl -s -o "$TMP/bad" -w '%{http_code}' -X POST \
	"http://$addr/debug/allocprof/start?rate=zero")
[ "$code" = 400 ] || fail "start?rate=zero answered $code, expected 400"
body=$(curl -sf -X POST "http://$addr/debug/allocprof/start?rate=1") ||
	fail "POST start failed"
[ "$body" = "sampling on, rate=1" ] || fail "start answered '$body'"
st=0
wait "$pid" || st=$?
[ "$st" = 0 ] || fail "http run: exit $st: $(cat "$TMP/http.err")"
[ "$(tail -1 "$TMP/http.out")" = "after 37 28749" ] || fail "http run printed $(cat "$TMP/http.out")"
check_after "$TMP/http.pb.gz"

# 4. stop: POST start, the program allocates in after_start and says so,
# POST stop, the program allocates in after_stop: not in the profile.
start_http stop waitstop
curl -sf -X POST "http://$addr/debug/allocprof/start?rate=1" >/dev/null || fail "POST start failed"
for _ in $(seq 200); do
	grep -q '^after' "$TMP/stop.out" && break
	sleep 0.1
done
body=$(curl -sf -X POST "http://$addr/debug/allocprof/stop") || fail "POST stop failed"
[ "$body" = "sampling off" ] || fail "stop answered '$body'"
wait "$pid" || fail "stop run: exit $?: $(cat "$TMP/stop.err")"
[ "$(tail -1 "$TMP/stop.out")" = stopped ] || fail "stop run printed $(cat "$TMP/stop.out")"
check_after "$TMP/stop.pb.gz"
"$CLI" report --alloc --json "$TMP/stop.pb.gz" | grep -q '"function":"after_stop"' &&
	fail "after_stop sampled after the stop"
echo PASS
