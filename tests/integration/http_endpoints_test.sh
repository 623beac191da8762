#!/usr/bin/env bash
# http_endpoints_test.sh: the runtime's HTTP endpoint (ALLOCPROF_OPTIONS
# http=) in a profiled long-running program, fetched with curl, checked
# with promtool and read with `go tool pprof http://...`; the program's
# output and exit status stay those of a plain run. (AP_TEST_PRELOAD: needs
# the runtime; skipped in sanitizer builds.)
#
# Other http_*_test.sh scripts source this file for its helpers:
#   . "$(dirname "$0")/http_endpoints_test.sh"
# Sourcing defines the helpers (and those of preload_smoke_test.sh), and
# installs a trap that stops (by pid) every program started here and
# removes $HTMP.

set -euo pipefail

# The runtime's test helpers: fail, skip, bounded, go_pprof, $TMP, $LIB.
. "$(dirname "${BASH_SOURCE[0]}")/preload_smoke_test.sh"
HLIB=$LIB
HPROG=$AP_PROGDIR/http_workload
HTMP=$TMP
HPIDS=()

# Programs run under timeout(1); TERM to timeout is passed on to them.
hcleanup() {
	local p
	for p in "${HPIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$HTMP"
}
trap hcleanup EXIT

[ -r "$HLIB" ] || fail "runtime not built: $HLIB"
[ -x "$HPROG" ] || fail "test program not built: $HPROG"
command -v curl >/dev/null || skip "curl is not installed"
# The endpoint must be in this runtime (its option table lists http=).
env LD_PRELOAD="$HLIB" ALLOCPROF_OPTIONS=help=1,dump_at_exit=0 true >"$HTMP/help" 2>&1
grep -q '^allocprof:   http ' "$HTMP/help" || fail "the runtime has no http= option"

# start_prog NAME [EXTRA_OPTIONS [PROG_ARGS...]]: run http_workload under the
# runtime with http=0 (a free loopback port) and wait for its port file.
# Sets ADDR (127.0.0.1:PORT) and PID; stdout/stderr in $HTMP/NAME.out/.err;
# the stop file is $HTMP/NAME.stop.
start_prog() {
	local name=$1 extra=${2:-}
	shift 2 || shift $#
	local opts="http=0,http_portfile=$HTMP/$name.port,output=$HTMP/$name.%p.pb.gz"
	[ -z "$extra" ] || opts="$opts,$extra"
	# env sets LD_PRELOAD for the program only, not for timeout itself.
	timeout --kill-after=5 60 env LD_PRELOAD="$HLIB" ALLOCPROF_OPTIONS="$opts" \
		"$HPROG" "$HTMP/$name.stop" 50 "$@" \
		>"$HTMP/$name.out" 2>"$HTMP/$name.err" </dev/null &
	PID=$!
	HPIDS+=("$PID")
	# EXTRA_OPTIONS may name the port file by pid: $HTMP/NAME.%p.port.
	local i pf=
	for i in $(seq 100); do
		pf=$(compgen -G "$HTMP/$name.port" || compgen -G "$HTMP/$name.*.port") &&
			break
		kill -0 "$PID" 2>/dev/null || fail "$name: exited early: $(cat "$HTMP/$name.err")"
		sleep 0.1
	done
	[ -n "$pf" ] || fail "$name: no port file after 10 s: $(cat "$HTMP/$name.err")"
	# With %p, the program's own file is the one named by its pid (the
	# child of timeout): its fork children write theirs later, but in the
	# same tick of the file system's clock as often as not, so the
	# oldest by time (ls -tr) was the child's in some runs.
	local prog_pid=
	read -r prog_pid _ <"/proc/$PID/task/$PID/children" 2>/dev/null || true
	if [ -n "$prog_pid" ] && [ -e "$HTMP/$name.$prog_pid.port" ]; then
		pf=$HTMP/$name.$prog_pid.port
	else
		pf=$(ls -tr $pf | head -1)
	fi
	ADDR=$(cat "$pf")
	[[ $ADDR =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "$name: port file says '$ADDR'"
	grep -qx "allocprof: serving on $ADDR" "$HTMP/$name.err" ||
		fail "$name: no 'serving on $ADDR' line on stderr: $(cat "$HTMP/$name.err")"
}

# stop_prog NAME PID: stop the program, require exit 0 and the stdout of a
# plain (unprofiled) run.
stop_prog() {
	local name=$1 pid=$2 st=0
	touch "$HTMP/$name.stop"
	wait "$pid" || st=$?
	local keep=() p
	for p in "${HPIDS[@]}"; do
		[ "$p" = "$pid" ] || keep+=("$p")
	done
	HPIDS=("${keep[@]+"${keep[@]}"}")
	[ $st = 0 ] || fail "$name: exit status $st: $(tail -3 "$HTMP/$name.err")"
	if [ ! -e "$HTMP/plain.out" ]; then
		touch "$HTMP/plain.stop"
		timeout 60 "$HPROG" "$HTMP/plain.stop" 50 >"$HTMP/plain.out" ||
			fail "plain run failed"
	fi
	cmp -s "$HTMP/plain.out" "$HTMP/$name.out" ||
		fail "$name: output differs from a plain run: $(diff "$HTMP/plain.out" "$HTMP/$name.out" | head -5)"
}

# fetch URL_PATH OUT [CURL_ARGS...]: GET with a time bound; prints the status.
fetch() {
	local path=$1 out=$2
	shift 2
	curl -sS --max-time 10 -o "$out" -w '%{http_code}' "$@" "http://$ADDR$path"
}

# metric NAME_AND_LABELS FILE: the value of one sample of the text format.
metric() {
	awk -v k="$1" '$1 == k { print $2; exit }' "$2"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	start_prog ep rate=65536,seed=7
	pid=$PID

	# /metrics: text 0.0.4 that promtool accepts, with sensible values.
	code=$(fetch /metrics "$HTMP/m.txt" -D "$HTMP/m.hdr")
	[ "$code" = 200 ] || fail "/metrics: status $code"
	grep -qi '^content-type: text/plain; version=0.0.4' "$HTMP/m.hdr" ||
		fail "/metrics: content type: $(cat "$HTMP/m.hdr")"
	if command -v promtool >/dev/null; then
		promtool check metrics <"$HTMP/m.txt" >"$HTMP/promtool.out" 2>&1 ||
			fail "promtool check metrics: $(head -5 "$HTMP/promtool.out")"
	else
		echo "note: promtool not installed, lint skipped" >&2
		partial=1
	fi
	# 64 x 64 KiB stay alive: 4 MiB. At R = 64 KiB (rate= below) each
	# buffer is sampled with probability pi = 1 - exp(-1) ~ 0.632, the
	# number sampled X ~ Binomial(64, pi) (mean 40.5, sd 3.86) and the
	# estimate is X * 64 KiB / pi. 0.6 x the truth needs X <= 24, 4.1 sd
	# below the mean (p ~ 2e-5); above, only the churn's few live nodes
	# (< 0.3 MiB) can add. The seed is fixed, so the run is repeatable.
	inuse=$(metric allocprof_inuse_bytes "$HTMP/m.txt")
	awk -v v="$inuse" 'BEGIN { exit !(v >= 0.6 * 4194304 && v <= 1.6 * 4194304) }' ||
		fail "allocprof_inuse_bytes = $inuse, expected about 4 MiB"
	lo=$(metric 'allocprof_inuse_bytes_lower{level="0.95"}' "$HTMP/m.txt")
	hi=$(metric 'allocprof_inuse_bytes_upper{level="0.95"}' "$HTMP/m.txt")
	awk -v l="$lo" -v v="$inuse" -v h="$hi" 'BEGIN { exit !(l <= v && v <= h && l < h) }' ||
		fail "inuse interval [$lo, $hi] does not bracket $inuse"
	alloc=$(metric allocprof_allocated_bytes_total "$HTMP/m.txt")
	awk -v a="$alloc" -v v="$inuse" 'BEGIN { exit !(a >= v) }' ||
		fail "allocated $alloc < in use $inuse"
	grep -q '^allocprof_allocation_size_bytes_bucket{le="+Inf"} ' "$HTMP/m.txt" ||
		fail "/metrics: no size histogram"
	grep -q '^allocprof_unwind_seconds_total ' "$HTMP/m.txt" ||
		fail "/metrics: no unwinding time"

	# The profiles: gzip'd pprof, attachment, go tool pprof names the sites.
	for p in heap allocs; do
		code=$(fetch "/debug/pprof/$p" "$HTMP/$p.pb.gz" -D "$HTMP/$p.hdr")
		[ "$code" = 200 ] || fail "/debug/pprof/$p: status $code"
		grep -qi '^content-type: application/octet-stream' "$HTMP/$p.hdr" ||
			fail "/debug/pprof/$p: content type"
		grep -qi '^content-disposition: attachment' "$HTMP/$p.hdr" ||
			fail "/debug/pprof/$p: no Content-Disposition"
		gzip -t "$HTMP/$p.pb.gz" || fail "/debug/pprof/$p: not gzip"
	done
	code=$(fetch / "$HTMP/index.html")
	[ "$code" = 200 ] && grep -q 'debug/pprof/' "$HTMP/index.html" || fail "/: $code"
	code=$(fetch /debug/pprof/ "$HTMP/pprof.html")
	[ "$code" = 200 ] && grep -q '/debug/pprof/heap' "$HTMP/pprof.html" ||
		fail "/debug/pprof/: $code"

	if command -v go >/dev/null; then
		go_pprof -top "http://$ADDR/debug/pprof/heap" >"$HTMP/top.heap" 2>&1 ||
			fail "go tool pprof heap: $(head -5 "$HTMP/top.heap")"
		grep -q 'Type: inuse_space' "$HTMP/top.heap" || fail "heap: not inuse_space"
		grep -q ' retain_buffers$' "$HTMP/top.heap" ||
			fail "heap: retain_buffers missing: $(grep -v '^allocprof' "$HTMP/top.heap" | head -20)"
		go_pprof -top "http://$ADDR/debug/pprof/allocs" >"$HTMP/top.allocs" 2>&1 ||
			fail "go tool pprof allocs: $(head -5 "$HTMP/top.allocs")"
		grep -q 'Type: alloc_space' "$HTMP/top.allocs" || fail "allocs: not alloc_space"
		grep -q ' churn_nodes$' "$HTMP/top.allocs" ||
			fail "allocs: churn_nodes missing: $(grep -v '^allocprof' "$HTMP/top.allocs" | head -20)"
	else
		echo "note: go not installed, go tool pprof not checked" >&2
	fi
	# The server's own work is never profiled: with rate=1 every allocation
	# of the program is a sample, and while it idles a dozen scrapes and
	# profile builds (zlib, dladdr, libc) add none.
	ep_addr=$ADDR
	start_prog idle rate=1 idle
	idle_pid=$PID
	sleep 0.3
	fetch /metrics "$HTMP/idle1.txt" >/dev/null
	for i in 1 2 3 4; do
		fetch /debug/pprof/heap /dev/null >/dev/null
		fetch /debug/pprof/allocs /dev/null >/dev/null
		fetch /metrics /dev/null >/dev/null
	done
	fetch /metrics "$HTMP/idle2.txt" >/dev/null
	n1=$(metric allocprof_sampled_allocations_total "$HTMP/idle1.txt")
	n2=$(metric allocprof_sampled_allocations_total "$HTMP/idle2.txt")
	[ -n "$n1" ] && [ "$n1" = "$n2" ] ||
		fail "the endpoint's own allocations were sampled: $n1 -> $n2"
	stop_prog idle "$idle_pid"
	ADDR=$ep_addr

	# A port already taken: one line on stderr, the program unharmed.
	touch "$HTMP/taken.stop"
	st=0
	timeout 60 env LD_PRELOAD="$HLIB" ALLOCPROF_OPTIONS="http=$ADDR,dump_at_exit=0" \
		"$HPROG" "$HTMP/taken.stop" 50 >"$HTMP/taken.out" 2>"$HTMP/taken.err" || st=$?
	[ $st = 0 ] || fail "taken port: exit status $st"
	grep -qx "allocprof: http=$ADDR: cannot listen on $ADDR: Address already in use; the endpoint is off" \
		"$HTMP/taken.err" || fail "taken port: stderr: $(cat "$HTMP/taken.err")"
	[ "$(wc -l <"$HTMP/taken.err")" = 1 ] || fail "taken port: more than one line"
	stop_prog ep "$pid"
	cmp -s "$HTMP/plain.out" "$HTMP/taken.out" || fail "taken port: output differs"

	# The port file name is a pattern: %p is the pid.
	timeout 60 env LD_PRELOAD="$HLIB" \
		ALLOCPROF_OPTIONS="http=0,http_portfile=$HTMP/pp.%p.port,dump_at_exit=0" \
		"$HPROG" "$HTMP/pp.stop" 50 >"$HTMP/pp.out" 2>"$HTMP/pp.err" &
	pp=$!
	HPIDS+=("$pp")
	for i in $(seq 100); do
		compgen -G "$HTMP/pp.[0-9]*.port" >/dev/null && break
		sleep 0.1
	done
	f=$(compgen -G "$HTMP/pp.[0-9]*.port") || fail "no port file named by pid"
	ADDR=$(cat "$f")
	[ "$(fetch /metrics /dev/null)" = 200 ] || fail "port file $f: $ADDR does not answer"
	stop_prog pp "$pp"
	# The lint not run makes the test a skip, never a pass.
	[ "${partial:-0}" = 0 ] || skip "promtool not installed (Debian package prometheus)"
	echo "http endpoints: ok"
fi
