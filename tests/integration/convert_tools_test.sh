#!/usr/bin/env bash
# convert_tools_test.sh: what allocprof writes, other tools read right.
# rpt_sites is profiled through the runtime (AP_TEST_PRELOAD), then:
#  - `convert --to pprof --symbolize` is read by `go tool pprof -top` with
#    its own symbolization off: the functions shown come from our Function/
#    Line tables and carry the known bytes;
#  - `convert --to heap_v2` is read by `jeprof --text`, whose totals (after
#    its own 1/(1-exp(-avg/R)) re-unbiasing) equal our report's totals;
#  - `convert --to folded` lines follow the folded grammar and sum to the
#    report's total; `convert --to json` is valid JSON with every sample.
# Each external tool is optional (exit 77 when all are missing).
set -euo pipefail
: "${AP_BINDIR:?}" "${AP_PROGDIR:?}"
CLI=$AP_BINDIR/allocprof
LIB=$AP_BINDIR/liballocprof_preload.so
PROG=$AP_PROGDIR/rpt_sites
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ap_convert.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -r "$LIB" ] || fail "runtime not built: $LIB"

profile() { # RATE NAME
	LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="rate=$1,seed=11,output=$TMP/$2.pb.gz" "$PROG"
	[ -s "$TMP/$2.pb.gz" ] || fail "no profile written at rate $1"
}
profile 1 exact
profile 65536 sampled
total_of() { # VIEW PROFILE -> the report's total bytes
	"$CLI" report --$1 --json "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["bytes"])'
}
ran=0

# folded: grammar and weights
"$CLI" convert --to folded --alloc "$TMP/exact.pb.gz" -o "$TMP/f.txt"
grep -Evq '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$TMP/f.txt" && fail "folded grammar: $(cat "$TMP/f.txt")"
sum=$(awk '{s += $NF} END {print s}' "$TMP/f.txt")
[ "$sum" = "$(total_of alloc "$TMP/exact.pb.gz")" ] || fail "folded sum $sum != report total"
grep -q ';make_nodes 240000$' "$TMP/f.txt" || fail "folded: no make_nodes line: $(cat "$TMP/f.txt")"
# One folded writer: convert's output is exactly allocprof folded's.
"$CLI" folded --alloc "$TMP/exact.pb.gz" > "$TMP/f2.txt"
cmp -s "$TMP/f.txt" "$TMP/f2.txt" || fail "convert --to folded differs from allocprof folded"

# json: parseable, every sample present with frames
"$CLI" convert --to json "$TMP/exact.pb.gz" -o "$TMP/p.json"
python3 - "$TMP/p.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
fns = {f.get("function") for s in p["samples"] for f in s["stack"]}
assert {"make_nodes", "make_buffers", "make_big", "make_zeroed"} <= fns, fns
assert p["period"] == 1 and p["sample_types"][1]["type"] == "alloc_space"
EOF

if command -v go >/dev/null; then
	ran=1
	"$CLI" convert --to pprof --symbolize "$TMP/exact.pb.gz" -o "$TMP/sym.pb.gz"
	mkdir -p "$TMP/home"
	HOME=$TMP/home GOCACHE=$TMP/gocache GOTOOLCHAIN=local GOPROXY=off GOFLAGS= \
		timeout 300 go tool pprof -top -symbolize=none -sample_index=alloc_space \
		"$TMP/sym.pb.gz" > "$TMP/top.txt" 2>&1 || fail "go tool pprof: $(cat "$TMP/top.txt")"
	for want in "3072kB.*make_big" "256kB.*make_buffers" "234.38kB.*make_nodes"; do
		grep -Eq "$want\$" "$TMP/top.txt" || fail "go tool pprof -top lacks '$want': $(cat "$TMP/top.txt")"
	done
else
	echo "go not installed: pprof check skipped" >&2
	partial=1
fi

if command -v jeprof >/dev/null; then
	ran=1
	for name in exact sampled; do
		"$CLI" convert --to heap_v2 "$TMP/$name.pb.gz" -o "$TMP/$name.heap"
		for view in alloc inuse; do
			ours=$(total_of $view "$TMP/$name.pb.gz")
			theirs=$(timeout 120 jeprof --text --show_bytes --${view}_space "$PROG" \
				"$TMP/$name.heap" 2>/dev/null | awk '/^Total:/ {print $2}')
			# Each heap_v2 line is one (stack, size) pair: its transformed
			# count is ~ the sample count (pi_exp ~ pi_exact to Z/R^2), so
			# rounding it and the bytes to integers moves jeprof's rescaled
			# total by well under 0.1%; at rate 1 nothing is rescaled: equal.
			python3 -c "import sys; o,t=float('$ours'),float('${theirs:-nan}'); \
tol = 0 if '$name' == 'exact' else 1e-3 * o; \
sys.exit(0 if abs(o - t) <= tol else 1)" ||
				fail "jeprof $view total ${theirs:-none} vs report $ours ($name)"
		done
	done
	grep -q "make_nodes" <(jeprof --text --alloc_space "$PROG" "$TMP/exact.heap" 2>/dev/null) ||
		fail "jeprof does not name make_nodes"
else
	echo "jeprof not installed: heap_v2 check skipped" >&2
	partial=1
fi
[ $ran = 1 ] || { echo "SKIP: neither go nor jeprof installed" >&2; exit 77; }
# A half that could not run makes the whole test a skip (exit 77), never a
# pass: scripts/deps.sh installs both tools.
[ "${partial:-0}" = 0 ] || { echo "SKIP: part of the checks did not run" >&2; exit 77; }
echo "convert tools: ok"
