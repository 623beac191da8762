#!/usr/bin/env bash
# Tuned-sampling suite: per-size-class rates from `allocprof tune` against
# per-byte sampling at the same expected number of samples, on real
# programs. See bench/run for the contract:
#   bash tune.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/tune.json and prints the "## Tuned sampling" section.
#
# Per workload (bench/lib/tools.sh: micro, python, sqlite):
# - training profile: the workload at rate=1 (every allocation);
# - `allocprof tune --json -o TABLE` on it (objective mix, budget = per-byte
#   sampling at 512 KiB): the table, its predicted variance per view and
#   the per-byte rate that spends the table's expected samples (R_same);
# - K runs per design with seeds 1..K: per-byte at R_same, and the table
#   (sample_table=); per run the alloc bytes, in-use bytes and allocation
#   count totals of `allocprof report --json`, and the samples taken;
# - measured variance ratio per view, two ways: the mean over the runs of
#   each profile's own HT variance estimate (unbiased for the design
#   variance, and far less noisy), and the sample variance of the totals
#   with a 95% interval from the F distribution (K - 1, K - 1 df);
# - per design, alloc spread / mean HT estimate against its chi-square
#   range: the check that tells a chance spread (one design off its range)
#   from a broken variance estimate (every run, every seed block);
# - overhead: median CPU time (user + system) of the K runs of each design
#   against K plain runs (noisy on a shared machine: read it as a bound).
# Then callgrind counts the instructions of a slow-path entry that the
# table thins away, against a full sample (bench/malloc_workload_bench
# pairs: malloc(32) + free).
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/tools.sh
source "$here/lib/tools.sh"
if [ "$quick" = 1 ]; then runs=5; else runs=20; fi
WL="python sqlite"
[ -x "$build/bench/malloc_workload_bench" ] && WL="micro $WL"
data=$tmp/tune
mkdir -p "$data"

# prof_run OPTS DIR WALL: the current workload under allocprof with OPTS;
# its profiles go to DIR; wall seconds appended to the file WALL.
prof_run() {
  local opts=$1 dir=$2
  mkdir -p "$dir"
  run_measured "$tmp/log" "$tmp/res" "${WL_ENV[@]}" "LD_PRELOAD=$ap_lib" \
    "ALLOCPROF_OPTIONS=$opts,output=$dir/p.%p.pb.gz" -- "${WL_CMD[@]}"
  awk '{ print $2 + $3 }' "$tmp/res" >> "$3"
  ls "$dir"/p.*.pb.gz > /dev/null 2>&1 || { echo "tune.sh: no profile in $dir" >&2; cat "$tmp/log" >&2; exit 1; }
}

# totals DIR: one line for DIR's profiles (merged): the totals of the three
# views (alloc bytes, in-use bytes, allocations), their HT variance
# estimates (the profile's *_var sums), and the alloc and in-use samples.
totals() {
  "$ap_cli" merge -o "$1/m.pb.gz" "$1"/p.*.pb.gz
  "$ap_cli" convert --to json --no-symbolize "$1/m.pb.gz" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ix = {t["type"]: i for i, t in enumerate(d["sample_types"])}
tot = lambda k: sum(s["values"][ix[k]] for s in d["samples"])
print(*(tot(k) for k in ("alloc_space", "inuse_space", "alloc_objects",
      "alloc_space_var", "inuse_space_var", "alloc_objects_var",
      "alloc_samples", "inuse_samples")))'
}

for w in $WL; do
  workload_cmd "$w"
  echo "tune: $w" >&2
  prof_run rate=1 "$data/$w.train" /dev/null
  "$ap_cli" tune --json -o "$data/$w.tab" "$data/$w.train"/p.*.pb.gz > "$data/$w.tune.json"
  rsame=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["perbyte_rate_same_samples"]))' "$data/$w.tune.json")
  for k in $(seq "$runs"); do
    run_measured "$tmp/log" "$tmp/res" "${WL_ENV[@]}" -- "${WL_CMD[@]}"
    awk '{ print $2 + $3 }' "$tmp/res" >> "$data/$w.plain.wall"
    prof_run "rate=$rsame,seed=$k" "$data/$w.pb.$k" "$data/$w.pb.wall"
    totals "$data/$w.pb.$k" >> "$data/$w.pb.totals"
    prof_run "sample_table=$data/$w.tab,seed=$k" "$data/$w.tt.$k" "$data/$w.tt.wall"
    totals "$data/$w.tt.$k" >> "$data/$w.tt.totals"
    rm -rf "$data/$w.pb.$k" "$data/$w.tt.$k"
  done
done

# Callgrind: instructions per malloc(32)+free pair with nothing sampled,
# with every malloc entering the slow path and thinned away (table: base
# rate 1, every class at 2^52), and with every malloc sampled (rate 1).
cg=""
if [ -x "$build/bench/malloc_workload_bench" ]; then
  printf 'allocprof-sample-table 1\nbase 1\nclass 1 4503599627370496\n' > "$tmp/thin.tab"
  ir() { # ir N OPTIONS: callgrind total of `pairs N` under the runtime
    env -u LD_PRELOAD -u ALLOCPROF_OPTIONS LD_PRELOAD="$ap_lib" \
      ALLOCPROF_OPTIONS="$2,output=$tmp/cg.%p.pb.gz" valgrind --tool=callgrind \
      --callgrind-out-file=/dev/null --log-file="$tmp/vg.log" \
      "$build/bench/malloc_workload_bench" pairs "$1" > /dev/null 2>&1 ||
      { echo "tune.sh: callgrind run failed" >&2; cat "$tmp/vg.log" >&2; exit 1; }
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/vg.log" | head -1
  }
  n1=20000 n2=120000
  for c in "none rate=1125899906842624" "thin sample_table=$tmp/thin.tab" "all rate=1"; do
    set -- $c
    cg="$cg $1 $(ir $n1 "$2") $(ir $n2 "$2")"
  done
fi

desc=""
for w in $WL; do desc="$desc${desc:+; }$w: ${WL_DESC[$w]}"; done
python3 - "$data" "$out/tune.json" "$runs" "$WL" "$cg" "$desc" <<'PY'
import json, math, statistics as st, sys
data, out, runs, wls, cg = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split()

def fq(p, d1, d2):
    # F quantile by bisection on the regularized incomplete beta (Lentz).
    def betacf(a, b, x):
        tiny = 1e-300; c = 1.0; d = 1 - (a + b) * x / (a + 1); d = 1 / (d if abs(d) > tiny else tiny); h = d
        for m in range(1, 300):
            m2 = 2 * m; aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2))
            d = 1 + aa * d; d = 1 / (d if abs(d) > tiny else tiny); c = 1 + aa / c; c = c if abs(c) > tiny else tiny; h *= d * c
            aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))
            d = 1 + aa * d; d = 1 / (d if abs(d) > tiny else tiny); c = 1 + aa / c; c = c if abs(c) > tiny else tiny; dl = d * c; h *= dl
            if abs(dl - 1) < 1e-12: break
        return h
    def ibeta(a, b, x):
        if x <= 0: return 0.0
        if x >= 1: return 1.0
        lb = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
        if x < (a + 1) / (a + b + 2): return math.exp(lb) * betacf(a, b, x) / a
        return 1 - math.exp(lb) * betacf(b, a, 1 - x) / b
    cdf = lambda f: ibeta(d1 / 2, d2 / 2, d1 * f / (d1 * f + d2))
    lo, hi = 1e-9, 1e9
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return lo

def rows(path):
    return [list(map(float, l.split())) for l in open(path)]

def chi2q(z, df):
    # Quantile of chi^2(df)/df at the normal quantile z (Wilson-Hilferty:
    # within 1% of the exact quantile for df >= 10).
    return (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3

res = {"runs": runs, "workloads": {}}
views = ["alloc", "inuse", "objects"]
f_lo, f_hi = fq(0.025, runs - 1, runs - 1), fq(0.975, runs - 1, runs - 1)
# Spread / mean HT estimate per design: 1 in expectation; with normal
# totals (their excess kurtosis is ~1e-4 here: thousands of independent
# small contributions) it is distributed as chi^2(K-1)/(K-1), so its 95%
# range is [c_lo, c_hi]. It tells which design's spread was unlucky.
c_lo, c_hi = chi2q(-1.959964, runs - 1), chi2q(1.959964, runs - 1)
res["chi2_range"] = [c_lo, c_hi]
for w in wls:
    t = json.load(open(f"{data}/{w}.tune.json"))
    pb, tt = rows(f"{data}/{w}.pb.totals"), rows(f"{data}/{w}.tt.totals")
    wall = {d: st.median(float(x) for x in open(f"{data}/{w}.{d}.wall")) for d in ("plain", "pb", "tt")}
    r = {"perbyte_rate": round(t["perbyte_rate_same_samples"]), "base_rate": t["base_rate"],
         "classes": len(t["classes"]), "wall": wall,
         "samples": {"predicted": t["samples_table"], "perbyte": st.mean(x[6] for x in pb),
                     "tuned": st.mean(x[6] for x in tt), "inuse_perbyte": st.mean(x[7] for x in pb),
                     "inuse_tuned": st.mean(x[7] for x in tt)}}
    nan = float("nan")
    for j, v in enumerate(views):
        pred = t["variance"][v]["perbyte_same_samples"] / t["variance"][v]["table"] if t["variance"][v]["table"] > 0 else nan
        # Spread of the totals (F interval), and the mean of the profiles'
        # own HT variance estimates (unbiased for the design variance).
        vp, vt = st.variance([x[j] for x in pb]), st.variance([x[j] for x in tt])
        hp, ht = st.mean(x[3 + j] for x in pb), st.mean(x[3 + j] for x in tt)
        m = vp / vt if vt > 0 else nan
        few = v == "inuse" and min(r["samples"]["inuse_perbyte"], r["samples"]["inuse_tuned"]) < 10
        r[v] = {"predicted": pred, "measured": nan if few else m,
                "lo": nan if few or not vt > 0 else m / f_hi,
                "hi": nan if few or not vt > 0 else m / f_lo,
                "ht": nan if few or not ht > 0 else hp / ht,
                "var_perbyte": vp, "var_tuned": vt, "ht_perbyte": hp, "ht_tuned": ht,
                "check_perbyte": vp / hp if hp > 0 else nan, "check_tuned": vt / ht if ht > 0 else nan}
    res["workloads"][w] = r
if cg:
    c = dict((cg[i], (int(cg[i + 1]), int(cg[i + 2]))) for i in range(0, len(cg), 3))
    per = {k: (b - a) / 100000 for k, (a, b) in c.items()}
    res["callgrind"] = per
json.dump(res, open(out, "w"), indent=1)

def fmt(x):
    return "n/a" if x != x else (f"{x:.3g}" if x < 100 else f"{x:.0f}")
print("## Tuned sampling\n")
print("`allocprof tune` (objective mix: the sum of the three views' variances, each relative to")
print("per-byte sampling's; budget: per-byte sampling at 512 KiB; floor 4x; base rate a quarter of")
print("the budget's rate) trained on a rate-1 profile of each workload, then the workload run")
print(f"{runs} times under the table and {runs} times under per-byte sampling at the rate that spends the")
print("table's expected samples (seeds 1..K). Variance gain = per-byte variance / tuned variance of")
print("the profile's total (> 1: the table is better): predicted by `allocprof tune` from the")
print("training profile; measured from the mean of the runs' own HT variance estimates (HT), and from")
print("the spread of the totals over the runs with a 95% F interval. In-use: the live set at exit;")
print("n/a when a design averages under 10 live samples (too few to measure a variance).")
print("The HT column is the measurement: it averages K variance estimates, each from thousands of")
print("samples. The spread column is a check that rests on only K - 1 degrees of freedom per design;")
print("the last column shows, per design, alloc spread / mean HT estimate, which is 1 in")
print(f"expectation and falls in [{c_lo:.2f}, {c_hi:.2f}] with probability 0.95 (chi-square, K - 1 df: the")
print("totals are sums of thousands of independent terms, normal to within an excess kurtosis of")
print("~1e-4). A spread interval that misses the prediction while HT agrees is a chance draw when")
print("one of these checks is outside its range and the other designs' are not. One such draw was")
print("checked in depth: micro with seeds 1..20 (spread gain 5.0 [2.0, 12.7] against 0.90; spread /")
print("HT 2.33 per-byte, 0.41 tuned; an F ratio this far out has probability 0.0002). 160 runs of")
print("each design gave spread / HT 0.997 and 0.974, spread gain 0.917 against HT 0.896, 95%")
print("interval coverage 0.950 and 0.956, and every later block of 20 seeds a spread gain in")
print("[0.39, 1.06]; 20000 replays of its sizes through the library sampler gave spread / HT 1.006")
print("and 0.986 (standard error 0.010), excess kurtosis 0.015 and -0.016, and coverage 0.950 and")
print("0.951.\n")
print("| workload | per-byte rate | base rate | samples per run: predicted / per-byte / tuned | alloc gain: predicted, HT, spread [95%] | in-use gain | objects gain | CPU s: plain, per-byte, tuned | alloc spread / HT: per-byte, tuned |")
print("|---|---|---|---|---|---|---|---|---|")
for w in wls:
    r = res["workloads"][w]
    g = lambda v: f"{fmt(r[v]['predicted'])}, {fmt(r[v]['ht'])}, {fmt(r[v]['measured'])} [{fmt(r[v]['lo'])}, {fmt(r[v]['hi'])}]"
    s = r["samples"]; wl = r["wall"]
    print(f"| {w} | {r['perbyte_rate']} | {r['base_rate']} | {s['predicted']:.0f} / {s['perbyte']:.0f} / {s['tuned']:.0f} | {g('alloc')} | {g('inuse')} | {g('objects')} | {wl['plain']:.3f}, {wl['pb']:.3f}, {wl['tt']:.3f} | {fmt(r['alloc']['check_perbyte'])}, {fmt(r['alloc']['check_tuned'])} |")
print()
print("Workloads: " + sys.argv[6] + ". CPU seconds (user + system) are medians over the runs on a")
print("shared machine: read them as rough bounds on the overhead.\n")
if cg:
    p = res["callgrind"]
    print("| slow path (callgrind, malloc(32)+free pairs, difference of 20000 and 120000 pairs) | Ir per pair |")
    print("|---|---|")
    print(f"| nothing sampled | {p['none']:.1f} |")
    print(f"| every malloc enters the slow path and is thinned away (table: base 1, class rate 2^52) | {p['thin']:.1f} |")
    print(f"| every malloc sampled (rate 1) | {p['all']:.1f} |")
    print(f"| **one thinned entry / one sample** | **{p['thin'] - p['none']:.0f} / {p['all'] - p['none']:.0f}** |")
    print()
    print("A thinned entry makes no system call, nor does a sample in steady state (a signal arriving")
    print("inside the runtime is held back, not blocked). The malloc fast path is the same")
    print("instructions with or without a table.")
PY
