#!/usr/bin/env bash
# peak_report_test.sh: report --peak end to end through the runtime
# (docs/TIME.md, "Peak"). progs/peak_known fills 8 MiB with blocks of
# 1..16 KiB, churns them for 400000 steps (free one, allocate one of the same
# size: the live total never exceeds the peak) and frees them; it prints
# the true peak of its blocks. The rest of the process's heap is a few
# KiB, far below the standard error (about 0.8 MiB at rate=65536).
#
# The snapshot is taken at the highest value of a noisy estimate, so it
# is biased up: during churn the sampled part of the heap is re-drawn at
# every sampled allocation and the maximum picks a favourable draw. Over
# 30 runtime seeds:
#  - the reported interval (lower bound at 1 - a/(2m), Bonferroni over
#    the m values the estimate took; upper bound from the running
#    maximum) covers the truth in at least 26 runs: if it held exactly
#    95%, P(Binomial(30, 0.95) <= 25) = 0.016; it is conservative by
#    construction, so it should cover nearly always;
#  - the bias is within the stated bound: the mean over runs of
#    (estimate - truth) / se is at most the mean of sqrt(2 ln m), the
#    bound on the expected maximum of m standard normals;
#  - the selection bias is real, so the protection is not decoration:
#    the mean of z = (estimate - truth) / se over the 30 runs is at least
#    0.6. An unbiased estimate gives z about N(0, 1) in each run and the
#    mean of 30 about N(0, 1/30): at or above 0.6 (3.3 standard errors)
#    with probability 0.0005. Measured: 1.05 to 1.63. (This replaces "the
#    naive interval, estimate -+ 1.96 se, misses the truth in at least 10
#    runs", a count taken from one early run: with a bias of about one
#    standard error it misses in some 25% of runs, 6 to 11 of 30 seen, so
#    that check failed on an unbiased share of runs, under load above all,
#    when the dumper catches fewer of the maxima.)
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"
command -v python3 >/dev/null || skip "python3 not installed"

P=$AP_PROGDIR/peak_known
runs=30
for seed in $(seq 1 $runs); do
	prof=$TMP/p$seed.pb.gz
	out=$(LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="rate=65536,seed=$seed,timeline=1s,output=$prof" \
		bounded 60 "$P" "$seed") || fail "seed $seed: program failed"
	echo "$out" | awk '{ print $2 }' >"$TMP/p$seed.truth"
	bounded 60 "$CLI" report --peak --json "$prof" >"$TMP/p$seed.json" ||
		fail "seed $seed: report --peak failed"
done
python3 - "$TMP" "$runs" <<'PY' || fail "peak statistics"
import json, math, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
cover = naive_miss = 0
zs, bounds = [], []
for s in range(1, runs + 1):
    t = float(open(f"{tmp}/p{s}.truth").read())
    d = json.load(open(f"{tmp}/p{s}.json"))
    p = d["peak"]
    assert d["view"] == "inuse" and d["sites"], "a table of sites"
    se = p["bytes_se"]
    cover += p["bytes_lo"] <= t <= p["bytes_hi"]
    naive_miss += not (p["bytes"] - 1.96 * se <= t <= p["bytes"] + 1.96 * se)
    zs.append((p["bytes"] - t) / se)
    bounds.append(math.sqrt(2 * math.log(max(p["candidates"], 2))))
mz, mb = sum(zs) / runs, sum(bounds) / runs
print(f"covered {cover}/{runs}; naive missed {naive_miss}; mean z {mz:.2f} <= {mb:.2f}")
assert cover >= 26, f"protected interval covered {cover}/{runs}"
assert mz <= mb, f"mean standardized bias {mz:.2f} above the bound {mb:.2f}"
assert mz >= 0.6, f"mean z {mz:.2f} below 0.6: no selection bias shown"
PY

# The text form: the in-use table, then the peak line.
"$CLI" report --peak "$TMP/p1.pb.gz" >"$TMP/text" || fail "text report"
grep -q "^inuse view" "$TMP/text" || fail "no in-use table"
grep -q "^peak: .* in use at " "$TMP/text" || fail "no peak line"
grep -Eq " (grow|churn) " "$TMP/text" || fail "the program's sites are not in the peak's table"
# Without timeline= or peak=1 there is no peak: one line, exit 2.
LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="output=$TMP/none.pb.gz" "$P" 1 >/dev/null
st=0
"$CLI" report --peak "$TMP/none.pb.gz" >/dev/null 2>"$TMP/err" || st=$?
[ "$st" = 2 ] || fail "no peak: exit $st, want 2"
grep -q 'no "peak" extension' "$TMP/err" || fail "no peak: $(cat "$TMP/err")"
# --peak with --alloc is a usage error
st=0
"$CLI" report --peak --alloc "$TMP/p1.pb.gz" >/dev/null 2>&1 || st=$?
[ "$st" = 1 ] || fail "--peak --alloc: exit $st, want 1"
echo ok
