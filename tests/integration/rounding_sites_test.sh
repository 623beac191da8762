#!/usr/bin/env bash
# rounding_sites_test.sh: values written by the runtime carry no rounding
# bias, and a row without samples gets the one zero-sample bound (issue
# 12, items 4 and 6).
#
# progs/rounding_sites makes 900 profile lines (60 stacks x sizes 17..31,
# one object each) at rate 16, where an object is sampled with probability
# pi in 0.67..0.87 and weighs 1/pi in (1, 2). The objects estimate of leaf
# must be 900 within 4 standard deviations. Each line writes X in {0, 1, 2}
# with E[X] = 1 and E[X^2] <= 2.5 (pi times the mean square of the rounded
# weight, at most 1 + 3(w - 1) <= 2.5 for w <= 1.5), so Var(sum) <= 900 x
# 1.5 and the band is 900 +- 4 x 36.7 = 900 +- 147. Rounding each weight
# to the nearest integer (the writer before) gives about 0.77 x 900 = 690.
# Everything is freed before exit: leaf's in-use row has no sample, and
# must show [0, ln(0.05) / ln(1 - 1/16)] = [0, 46.4] bytes ("none
# sampled"), objects unbounded (JSON null), never "exact" [0, 0].
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

bounded 60 env LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="rate=16,seed=1,max_depth=128,output=$TMP/p.pb.gz" \
	"$AP_PROGDIR/rounding_sites" || fail "rounding_sites failed"
"$CLI" report --alloc --json --focus '^leaf$' "$TMP/p.pb.gz" > "$TMP/a.json" ||
	fail "report --alloc failed"
python3 - "$TMP/a.json" <<'PY' || fail "objects estimate biased by rounding"
import json, sys
t = json.load(open(sys.argv[1]))["total"]
print("# leaf objects", t["objects"], "samples", t["samples"], t["interval"])
assert abs(t["objects"] - 900) <= 147, t
assert t["interval"] != "exact", t
PY
"$CLI" report --inuse --json --focus '^leaf$' "$TMP/p.pb.gz" > "$TMP/i.json" ||
	fail "report --inuse failed"
python3 - "$TMP/i.json" <<'PY' || fail "zero-sample row not bounded"
import json, math, sys
t = json.load(open(sys.argv[1]))["total"]
print("# leaf in use", t)
hi = math.log(0.05) / math.log1p(-1 / 16)
assert t["samples"] == 0 and t["interval"] == "none sampled", t
assert t["bytes_lo"] == 0 and abs(t["bytes_hi"] - hi) <= 1, t
assert t["objects_hi"] is None, t
PY
"$CLI" report --inuse --focus '^leaf$' "$TMP/p.pb.gz" | grep -q 'unbounded.*none sampled' ||
	fail "the table does not say unbounded"
echo "PASS: unbiased rounding and the zero-sample bound"
