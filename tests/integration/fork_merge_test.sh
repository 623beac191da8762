#!/usr/bin/env bash
# fork_merge_test.sh: the statistics of a pre-fork server's profiles
# (issue 12, item 1). progs/prefork allocates 1 MiB in parent_work, then
# forks 8 children that each allocate the same 2 MiB in child_work; every
# process writes its own profile (fork=follow). The merge of the nine
# profiles (report of them all) must estimate the truth: parent_work
# 1 MiB (counted once, not once per child) and child_work 16 MiB, with
# 95% intervals that cover at the nominal rate.
#
# Over N = 200 seeds (fixed, so reruns draw the same parents; children's
# streams also depend on their pids) each site's coverage count X is
# Binomial(200, 0.95) if the intervals are right: mean 190, sd 3.08. We
# accept X >= 181 (2.9 sd below the mean, P(X <= 180) ~ 0.003). Before
# the fix every child repeated the parent's samples (parent_work estimated
# at ~9 MiB: coverage 0) and the children, sharing the parent's PRNG state,
# sampled their identical work identically (intervals sqrt(8) too narrow:
# child_work coverage ~0.5).
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

N=200
PARENT=$((16384 * 64))
CHILD=$((8 * 32768 * 64))
: > "$TMP/rows"
for ((seed = 1; seed <= N; seed++)); do
	d=$TMP/run$seed
	mkdir "$d"
	bounded 60 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=65536,seed=$seed,fork=follow,output=$d/p.%p.pb.gz" \
		"$AP_PROGDIR/prefork" || fail "prefork failed with seed $seed"
	n=$(count_files "$d/p.*.pb.gz")
	[ "$n" = 9 ] || fail "seed $seed: $n profiles, want 9"
	"$CLI" report --alloc --json --top 0 --focus '_work$' "$d"/p.*.pb.gz |
		python3 -c '
import json, sys
d = json.load(sys.stdin)
s = {x["function"]: x for x in d["sites"]}
for f in ("parent_work", "child_work"):
    x = s.get(f, {"bytes": 0, "bytes_lo": 0, "bytes_hi": 0})
    print(f, x["bytes"], x["bytes_lo"], x["bytes_hi"])' >> "$TMP/rows" ||
		fail "seed $seed: report failed"
	rm -rf "$d"
done
python3 - "$TMP/rows" "$N" "$PARENT" "$CHILD" <<'PY' || fail "coverage or bias off"
import math, sys
rows = [l.split() for l in open(sys.argv[1])]
n, truth = int(sys.argv[2]), {"parent_work": int(sys.argv[3]), "child_work": int(sys.argv[4])}
ok = True
for f, t in truth.items():
    r = [(float(b), float(lo), float(hi)) for g, b, lo, hi in rows if g == f]
    assert len(r) == n, (f, len(r))
    cov = sum(lo <= t <= hi for b, lo, hi in r)
    mean = sum(b for b, _, _ in r) / n
    sd = math.sqrt(sum((b - mean) ** 2 for b, _, _ in r) / (n - 1))
    # unbiased: the mean of n estimates within 4 standard errors of the truth
    z = (mean - t) / (sd / math.sqrt(n))
    print(f"# {f}: coverage {cov}/{n}, mean {mean:.0f} (truth {t}, z {z:+.2f})")
    ok &= cov >= 181 and abs(z) <= 4
sys.exit(0 if ok else 1)
PY
echo "PASS: merged pre-fork profiles cover at nominal"
