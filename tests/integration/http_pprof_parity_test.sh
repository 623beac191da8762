#!/usr/bin/env bash
# http_pprof_parity_test.sh: Go net/http/pprof parity of the endpoint
# (docs/HTTP.md): /debug/pprof/allocs?seconds=2 through `go tool pprof
# -seconds 2` gives what a program with a known steady allocation rate
# allocated in those 2 s; heap?debug=1 is text that go tool pprof and
# jeprof read; bad parameters get 400, unknown profiles 404, and /metrics
# is answered while a delta waits. Loopback only, every step time-bounded.
# (AP_TEST_PRELOAD: needs the runtime; skipped in sanitizer builds.)

set -euo pipefail
. "$(dirname "$0")/http_endpoints_test.sh"
HPROG=$AP_PROGDIR/http_steady
[ -x "$HPROG" ] || fail "test program not built: $HPROG"

opts="http=0,http_portfile=$HTMP/st.port,rate=65536,seed=11,dump_at_exit=0"
timeout --kill-after=5 90 env LD_PRELOAD="$HLIB" ALLOCPROF_OPTIONS="$opts" \
	"$HPROG" "$HTMP/st.stop" 80 >"$HTMP/st.out" 2>"$HTMP/st.err" </dev/null &
PID=$!
HPIDS+=("$PID")
for i in $(seq 100); do
	[ -s "$HTMP/st.port" ] && break
	sleep 0.1
done
ADDR=$(cat "$HTMP/st.port") || fail "no port file: $(cat "$HTMP/st.err")"

# Bad values: 400 with one line; gc= and unknown parameters ignored.
for q in seconds=0 seconds=301 seconds=x debug=x 'seconds=1&debug=1'; do
	code=$(fetch "/debug/pprof/heap?$q" "$HTMP/bad")
	[ "$code" = 400 ] && [ "$(wc -l <"$HTMP/bad")" = 1 ] ||
		fail "heap?$q: status $code, body $(head -c 200 "$HTMP/bad")"
done
code=$(fetch '/debug/pprof/heap?gc=1&foo=bar' "$HTMP/gc.pb.gz")
[ "$code" = 200 ] && gzip -t "$HTMP/gc.pb.gz" || fail "heap?gc=1: status $code"
code=$(fetch /debug/pprof/goroutine "$HTMP/nf")
[ "$code" = 404 ] && [ "$(wc -l <"$HTMP/nf")" = 1 ] || fail "unknown profile: status $code"

# A delta waits in its connection, not in the server thread: /metrics is
# answered meanwhile.
code=$(fetch '/debug/pprof/heap?seconds=3' "$HTMP/d3.pb.gz" &
	sleep 0.5
	t0=$(date +%s%N)
	fetch /metrics /dev/null >/dev/null
	echo $((($(date +%s%N) - t0) / 1000000)) >"$HTMP/mwait"
	wait)
ms=$(cat "$HTMP/mwait")
[ "$ms" -lt 2000 ] || fail "/metrics took $ms ms while a delta waited"
gzip -t "$HTMP/d3.pb.gz" || fail "heap?seconds=3: not gzip"

if command -v go >/dev/null; then
	# http_steady allocates 64 KiB each millisecond in 4 KiB blocks:
	# 2 s = 131,072,000 bytes (to one ms, 0.05%). At R = 64 KiB a block is
	# sampled with pi = 1 - exp(-1/16) = 0.0606, weight w = 16.5; the HT
	# total of n = 32,000 blocks has relative sd sqrt((w - 1) / n) = 2.2%.
	# 12% is 5 sd plus 1% for the program's pacing on a loaded machine.
	go_pprof -top -unit=B -seconds 2 "http://$ADDR/debug/pprof/allocs" \
		>"$HTMP/delta.top" 2>&1 || fail "go tool pprof -seconds 2: $(head -5 "$HTMP/delta.top")"
	grep -q 'Type: alloc_space' "$HTMP/delta.top" || fail "delta: not alloc_space"
	tot=$(sed -n 's/.*Total samples = \([0-9]*\)B.*/\1/p' "$HTMP/delta.top")
	[ -n "$tot" ] || fail "no total: $(head -8 "$HTMP/delta.top")"
	echo "delta allocs over 2 s: $tot bytes (expected 131072000)"
	awk -v t="$tot" 'BEGIN { exit !(t >= 0.88 * 131072000 && t <= 1.12 * 131072000) }' ||
		fail "delta total $tot, expected 131072000 +- 12%"
	grep -q ' steady_alloc$' "$HTMP/delta.top" || fail "delta: steady_alloc missing"
fi

# debug=1: the legacy text, read by go tool pprof and jeprof.
code=$(fetch '/debug/pprof/heap?debug=1' "$HTMP/heap.txt" -D "$HTMP/txt.hdr")
[ "$code" = 200 ] || fail "heap?debug=1: status $code"
grep -qi '^content-type: text/plain' "$HTMP/txt.hdr" || fail "debug=1: content type"
head -1 "$HTMP/heap.txt" | grep -Eq '^heap profile: +[0-9]+: +[0-9]+ \[ *[0-9]+: +[0-9]+\] @ heap_v2/65536$' ||
	fail "debug=1: first line '$(head -1 "$HTMP/heap.txt")'"
if command -v go >/dev/null; then
	go_pprof -top -sample_index=alloc_space "$HPROG" "$HTMP/heap.txt" >"$HTMP/txt.top" 2>&1 ||
		fail "go tool pprof on debug=1: $(head -5 "$HTMP/txt.top")"
	grep -q ' steady_alloc$' "$HTMP/txt.top" || fail "go pprof text: $(head -8 "$HTMP/txt.top")"
fi
if command -v jeprof >/dev/null; then
	bounded 120 jeprof --text --alloc_space "$HPROG" "$HTMP/heap.txt" >"$HTMP/jep.top" 2>&1 ||
		fail "jeprof on debug=1: $(head -5 "$HTMP/jep.top")"
	grep -q 'steady_alloc' "$HTMP/jep.top" || fail "jeprof text: $(head -8 "$HTMP/jep.top")"
fi

touch "$HTMP/st.stop"
wait "$PID" || fail "http_steady: exit status $?"
HPIDS=()
echo ok
