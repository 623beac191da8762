#!/usr/bin/env bash
# Sampler suite: instructions per non-sampled allocation on the fast path,
# cost of one gap draw (exact geometric vs exponential), and the combined
# limit against a plain bump allocator. See bench/run for the contract:
#   bash sampler.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/sampler.json and prints the "## Sampler" section.
#
# Instruction counts come from callgrind, as the difference between two runs
# of the same kernel with N1 and N2 iterations divided by N2 - N1, so that
# process start-up and set-up cancel exactly. Wall times are medians of
# paired runs inside one process (bench/sampler_bench.c).
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
bin=$build/bench/sampler_bench
[ -x "$bin" ] || { echo "sampler.sh: $bin not built" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "sampler.sh: valgrind is required" >&2; exit 1; }

if [ "$quick" = 1 ]; then
  loop_n1=100000 loop_n2=600000 gap_n1=10000 gap_n2=60000 runs=3 tn=200000
else
  loop_n1=200000 loop_n2=2200000 gap_n1=20000 gap_n2=220000 runs=9 tn=2000000
fi

# Total instructions (Ir) callgrind collected for one run of KERNEL N.
ir() {
  local log
  log=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 >/dev/null)
  local v
  v=$(printf '%s\n' "$log" | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | head -1)
  [ -n "$v" ] || { echo "sampler.sh: no callgrind total for $1 $2" >&2; printf '%s\n' "$log" >&2; exit 1; }
  echo "$v"
}

# Instructions per iteration of KERNEL: (Ir(N2) - Ir(N1)) / (N2 - N1).
per_op() {
  local a b
  a=$(ir "$1" "$2")
  b=$(ir "$1" "$3")
  awk -v a="$a" -v b="$b" -v n1="$2" -v n2="$3" 'BEGIN { printf "%.3f", (b - a) / (n2 - n1) }'
}

# The kernels must not take the slow path (R = 2^56): check, don't assume.
for k in sample sample_pt bump_comb; do
  line=$("$bin" "$k" "$loop_n2")
  case "$line" in
    *"slow_calls=0 "*) ;;
    *) echo "sampler.sh: $k took the slow path: $line" >&2; exit 1 ;;
  esac
done

bare=$(per_op bare $loop_n1 $loop_n2)
sample=$(per_op sample $loop_n1 $loop_n2)
sample_pt=$(per_op sample_pt $loop_n1 $loop_n2)
gap_geo=$(per_op gap_geo $gap_n1 $gap_n2)
gap_exp=$(per_op gap_exp $gap_n1 $gap_n2)
bump_plain=$(per_op bump_plain $loop_n1 $loop_n2)
bump_comb=$(per_op bump_comb $loop_n1 $loop_n2)
timing=$("$bin" time "$runs" "$tn")

calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
extra=$(calc "$sample - $bare")
extra_pt=$(calc "$sample_pt - $bare")
gap_ratio=$(calc "$gap_geo / $gap_exp")
bump_extra=$(calc "$bump_comb - $bump_plain")
field() { printf '%s\n' "$timing" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
geo_ns=$(field geometric_ns)
exp_ns=$(field exponential_ns)
ns_ratio=$(field ratio_geo_over_exp)

mkdir -p "$out"
cat > "$out/sampler.json" <<EOF
{"quick":$quick,
 "fast_path":{"n1":$loop_n1,"n2":$loop_n2,"bare_ir_per_op":$bare,
   "should_sample_ir_per_op":$sample,"extra_ir":$extra,
   "should_sample_pt_ir_per_op":$sample_pt,"extra_ir_pt":$extra_pt,"budget_ir":4},
 "gap_draw":{"n1":$gap_n1,"n2":$gap_n2,"geometric_ir":$gap_geo,"exponential_ir":$gap_exp,
   "ir_ratio_geo_over_exp":$gap_ratio,"timing":$timing},
 "bump":{"plain_ir_per_op":$bump_plain,"combined_ir_per_op":$bump_comb,"extra_ir":$bump_extra}}
EOF

gap_note=$(awk -v r="$gap_ratio" -v t="$ns_ratio" 'BEGIN {
  if (r < 1.1 && t < 1.25)
    print "Measured here, the exact draw costs within 10% of the instructions and 25% of the time of the approximation, so allocprof defaults to the exact one.";
  else
    printf "Measured here, the exact draw costs %.2fx the instructions and %.2fx the time of the approximation.\n", r, t }')
verdict=$(awk -v e="$extra" 'BEGIN { print (e <= 4.0 + 1e-9) ? "within" : "OVER" }')
cat <<EOF
## Sampler

Per-byte sampler (\`src/lib/sampler.c\`, \`include/allocprof/sampler.h\`), measured by
\`bench/sampler_bench.c\`. Instructions are callgrind Ir per iteration, from the difference
of two runs (N = $loop_n1 and $loop_n2 iterations; gap draws $gap_n1 and $gap_n2), so they
exclude start-up. The fast-path loops use R = 2^56 and are checked to take no slow path.

| fast path, per non-sampled allocation | Ir / allocation |
|---|---|
| bare loop consuming the sizes | $bare |
| + \`ap_sampler_should_sample\` | $sample |
| **extra for should_sample** ($verdict the budget of 4) | **$extra** |
| + \`ap_sampler_should_sample_pt\` (passthrough check) | $sample_pt (extra $extra_pt) |

| one gap draw (R = 524288) | Ir / draw | ns / draw (median of $runs paired runs) |
|---|---|---|
| exact geometric \`floor(log U / log1p(-1/R))\` | $gap_geo | $geo_ns |
| exponential \`floor(-R log U)\` | $gap_exp | $exp_ns |
| ratio geometric / exponential | $gap_ratio | $ns_ratio (median of per-pair ratios) |

| bump allocation fast path | Ir / allocation |
|---|---|
| plain: \`size <= limit - ptr\` | $bump_plain |
| combined limit: \`size <= combined_limit - ptr\` | $bump_comb |
| extra | $bump_extra |

Both gap kinds take one xoshiro256** draw, one \`log\` and one division (geometric) or
multiplication (exponential). $gap_note
EOF
