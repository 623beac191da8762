#!/usr/bin/env bash
# preload_tools_test.sh: other tools read what the runtime writes.
# `go tool pprof -top PROGRAM PROFILE` names the test program's allocating
# functions and its totals equal the program's own counts (rate=1, so the
# profile is exact); `jeprof --text` reads the format=heap_v2 output of the
# same run configuration with totals equal to pprof's (jeprof prints bytes
# with --show_bytes; its re-unbiasing of the transformed heap_v2 counts can
# move a total by rounding only: at most 1 byte per stack).
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/exact_allocs
have_go=0
have_jeprof=0
command -v go >/dev/null && have_go=1
command -v jeprof >/dev/null && have_jeprof=1
[ $have_go = 1 ] || [ $have_jeprof = 1 ] || skip "neither go nor jeprof is installed"

run_prof() { # run_prof FORMAT OUTPUT: exact_allocs at rate=1
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,seed=9,format=$1,output=$2" \
		"$PROG" >"$TMP/expect.$1" || fail "exact_allocs failed under the runtime ($1)"
}

run_prof pprof "$TMP/p.pb.gz"
run_prof heap_v2 "$TMP/p.heap"
[ -s "$TMP/p.pb.gz" ] || fail "no pprof profile"
[ -s "$TMP/p.heap" ] || fail "no heap_v2 profile"

# sum of one column of go tool pprof -raw's sample table (column 1..4:
# alloc_objects alloc_space inuse_objects inuse_space).
raw_total() {
	awk -v c="$1" '
		/^Samples:/ { s = 1; next }
		s && /^[A-Za-z]/ && !/^ / { if (seen) exit }
		s && /^ *[0-9-]+( +[0-9-]+)+:/ { seen = 1; t += $c }
		END { printf "%.0f\n", t }' "$TMP/raw.txt"
}

if [ $have_go = 1 ]; then
	go_pprof -top -nodefraction=0 -nodecount=10000 -sample_index=alloc_space "$PROG" "$TMP/p.pb.gz" >"$TMP/top.txt" 2>"$TMP/top.err" ||
		fail "go tool pprof -top failed: $(head -3 "$TMP/top.err")"
	for f in site_malloc_small site_malloc_varied site_calloc site_realloc_grow \
		site_aligned site_big site_live_at_exit site_thread_alloc; do
		grep -q " $f\$" "$TMP/top.txt" || fail "pprof -top does not show $f: $(head -20 "$TMP/top.txt")"
	done
	go_pprof -raw "$TMP/p.pb.gz" >"$TMP/raw.txt" 2>"$TMP/raw.err" ||
		fail "go tool pprof -raw failed: $(head -3 "$TMP/raw.err")"
	# The program's own sites are a lower bound of the totals (stdio and
	# thread creation allocate too, a few KiB at most).
	want_alloc=$(awk '$1 == "site" { t += $4 } END { print t }' "$TMP/expect.pprof")
	want_inuse=$(awk '$1 == "site" { t += $6 } END { print t }' "$TMP/expect.pprof")
	got_alloc=$(raw_total 2)
	got_inuse=$(raw_total 4)
	echo "pprof totals: alloc $got_alloc (sites $want_alloc), inuse $got_inuse (sites $want_inuse)" >&2
	if [ "$got_alloc" -lt "$want_alloc" ] || [ "$got_alloc" -gt $((want_alloc + 65536)) ]; then
		fail "pprof alloc_space total $got_alloc, program allocated $want_alloc in its sites"
	fi
	if [ "$got_inuse" -lt "$want_inuse" ] || [ "$got_inuse" -gt $((want_inuse + 65536)) ]; then
		fail "pprof inuse_space total $got_inuse, program holds $want_inuse in its sites"
	fi
fi

if [ $have_jeprof = 1 ]; then
	head -1 "$TMP/p.heap" | grep -q '^heap_v2/1$' || fail "heap_v2 header: $(head -1 "$TMP/p.heap")"
	for view in inuse_space alloc_space; do
		bounded 120 jeprof --text --show_bytes --$view "$PROG" "$TMP/p.heap" \
			>"$TMP/je.$view" 2>"$TMP/je.err" ||
			fail "jeprof --$view failed: $(head -3 "$TMP/je.err")"
		grep -q 'site_big' "$TMP/je.$view" || fail "jeprof --$view does not show site_big"
	done
	if [ $have_go = 1 ]; then
		nstacks=$(grep -c '^@' "$TMP/p.heap")
		for view in inuse_space:4 alloc_space:2; do
			je=$(awk '/^Total:/ { print $2; exit }' "$TMP/je.${view%%:*}")
			pp=$(raw_total "${view##*:}")
			d=$((je > pp ? je - pp : pp - je))
			# heap_v2 and pprof come from two runs of a deterministic
			# program at rate=1: equal but for jeprof's rounding.
			echo "${view%%:*}: jeprof $je, pprof $pp, $nstacks stacks" >&2
			[ "$d" -le "$nstacks" ] ||
				fail "${view%%:*}: jeprof total $je vs pprof $pp (diff $d > $nstacks stacks)"
		done
	fi
fi
echo "tools: ok"
