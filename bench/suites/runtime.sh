#!/usr/bin/env bash
# Runtime suite: what liballocprof_preload.so costs a malloc-heavy program
# (bench/malloc_workload_bench.c). See bench/run for the contract:
#   bash runtime.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/runtime.json and prints the "## Runtime overhead" section.
#
# - Time ratios: the same workload plain and under the runtime at the default
#   rate, in rounds that run every configuration of an allocator once (plain,
#   profiled, profiled with nothing sampled, the forwarding preload,
#   profiled with range=1 (design 2, the default before 2026-11-28), and
#   over jemalloc its own profiler), the order rotated by one each round, so drift on this shared
#   machine hits all of a round alike; each ratio is the median over rounds
#   of that round's ratio. Two clocks: the workload loop (steady state, CPU
#   time measured inside the program) and the whole process (wall time:
#   start-up, unwinder warm-up and the final dump included).
# - Instructions per non-sampled malloc+free pair: callgrind totals of the
#   pairs kernel with N1 and N2 pairs, plain and under the runtime with a rate
#   so large nothing is sampled: ((P(N2) - P(N1)) - (B(N2) - B(N1))) / (N2 - N1),
#   so start-up costs cancel exactly.
# - Cost per sample (CPU time of the loop, which the other programs on a
#   shared machine do not inflate as they do its wall time): rate=1 makes
#   every malloc a sample; the deepfp kernel
#   recurses DEPTH frames (8, 32, 64; built with frame pointers) before each
#   malloc(64)+free, once per unwinder; the deep kernel (built without them)
#   with libunwind, its default. (loop time under the runtime - plain loop
#   time) / samples, medians of paired runs.
# - Cost per sample at the default rate, everything included: the median over
#   rounds of (profiled loop - loop with nothing sampled) / samples recorded
#   in that round (the program prints the runtime's count). Both runs of a
#   difference share a round: with each configuration's runs in a block of
#   its own, minutes apart, the estimate moved by 2x between runs of the
#   suite (1.5 and 2.9 us over jemalloc, 3.9 and 1.8 us over glibc).
# - Extra peak RSS: getrusage maxrss of the mixed workload, median profiled
#   minus median plain.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
bin=$build/bench/malloc_workload_bench
lib=$build/liballocprof_preload.so
fwd=$build/bench/forward_preload.so # the interposition floor (bench/forward_preload.c)
[ -x "$bin" ] || { echo "runtime.sh: $bin not built" >&2; exit 1; }
[ -r "$lib" ] || { echo "runtime.sh: $lib not built" >&2; exit 1; }
[ -r "$fwd" ] || { echo "runtime.sh: $fwd not built" >&2; exit 1; }
# A preload that exports nothing interposes nothing: its row would be the
# program alone (as it was until 2026-11-28, under the project's hidden
# default visibility).
for sym in malloc calloc realloc free; do
  nm -D --defined-only "$fwd" | awk -v s="$sym" '$3 == s { f = 1 } END { exit !f }' ||
    { echo "runtime.sh: $fwd does not export $sym" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "runtime.sh: valgrind is required" >&2; exit 1; }
# awk reads to the end (an early exit can SIGPIPE ldconfig: pipefail).
jem=$(ldconfig -p | awk '!found && $1 == "libjemalloc.so.2" && /x86-64/ { print $NF; found = 1 }')

if [ "$quick" = 1 ]; then
  runs=7 mixed_ops=10000000 deep_ops=50000 deep_runs=5 pairs_n1=100000 pairs_n2=300000
  cg_ops=1000000
else
  runs=21 mixed_ops=40000000 deep_ops=200000 deep_runs=9 pairs_n1=200000 pairs_n2=1200000
  cg_ops=4000000
fi
depths="8 32 64"
unwinders="fp libgcc libunwind"
huge_rate=1125899906842624 # 2^50 bytes: nothing is sampled
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_bench_runtime.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
popts="output=$tmp/p.%p.pb.gz"

. "$(dirname "$0")/../lib/paired.sh" # median, col, ratio, calc
# shellcheck source=bench/lib/shift.sh
. "$(dirname "$0")/../lib/shift.sh" # median_ci

# field KEY: value of KEY=... in the program's output line ($tmp/line).
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$tmp/line"; }

# The CPU every single-threaded run is pinned to. A shared machine's CPUs
# need not be alike (another tenant may load one): unpinned, each run lands
# on either, and a round's ratio depends on where its runs landed. Pinned,
# all runs of a comparison share one CPU: the faster by median of three
# short calibration runs, whose times the section prints.
pin="" calib=""
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then
  best=""
  for c in $(seq 0 $(($(nproc) - 1))); do
    t=$(for _ in 1 2 3; do
          taskset -c "$c" "$bin" mixed 2000000 | sed -n 's/.* cpu_seconds=\([0-9.]*\).*/\1/p'
        done | median)
    calib="$calib${calib:+, }CPU $c $t s"
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$t pin=$c
    fi
  done
fi

# one_run TAG ENV... -- ARGS...: run the bench program once with the
# environment assignments ENV; append "wall loop rss" to $tmp/TAG.
one_run() {
  local tag=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local t0 t1
  t0=$(date +%s%N)
  local cmd=("$bin" "$@")
  # pinned unless the run is threaded (mixed OPS THREADS with THREADS > 1)
  if [ -n "$pin" ] && { [ "$1" != mixed ] || [ "${3:-1}" = 1 ]; }; then
    cmd=(taskset -c "$pin" "$bin" "$@")
  fi
  env -u LD_PRELOAD -u MALLOC_CONF -u ALLOCPROF_OPTIONS "${envs[@]}" "${cmd[@]}" \
    >"$tmp/line" 2>"$tmp/err" || { echo "runtime.sh: run failed: ${envs[*]} $*" >&2; cat "$tmp/err" >&2; exit 1; }
  t1=$(date +%s%N)
  [ ! -s "$tmp/err" ] || { echo "runtime.sh: stderr from ${envs[*]} $*:" >&2; cat "$tmp/err" >&2; exit 1; }
  echo "$(( (t1 - t0) / 1000 ))e-6 $(field seconds) $(field maxrss_kb) $(field samples) $(field cpu_seconds) $(field loop_faults)" >>"$tmp/$tag"
  rm -f "$tmp"/p.*.pb.gz
}

# paired NAME "BASE ENV" "PROF ENV" ARGS...: $runs interleaved pairs.
# Leaves per-pair results in $tmp/NAME.base and $tmp/NAME.prof.
paired() {
  local name=$1 base=$2 prof=$3
  shift 3
  rm -f "$tmp/$name.base" "$tmp/$name.prof"
  # shellcheck disable=SC2086 # the ENV strings are word lists on purpose
  for i in $(seq "${npairs:-$runs}"); do
    if [ $((i % 2)) = 1 ]; then
      one_run "$name.base" $base -- "$@"
      one_run "$name.prof" $prof -- "$@"
    else
      one_run "$name.prof" $prof -- "$@"
      one_run "$name.base" $base -- "$@"
    fi
  done
}

# rounds BASE_ENV CONFIG=ENV... -- ARGS...: $runs rounds, each running the
# plain program (BASE_ENV) and every CONFIG once, in an order rotated by one
# each round. Line i of every file is round i: CONFIG's runs go to
# $tmp/CONFIG.prof and the round's plain run to $tmp/CONFIG.base for each
# CONFIG, so ratio and same_round_ns pair runs of one round.
rounds() {
  local base=$1
  shift
  local names=() envs=()
  while [ "$1" != -- ]; do names+=("${1%%=*}"); envs+=("${1#*=}"); shift; done
  shift
  local k=$((${#names[@]} + 1)) i j c n
  for n in "${names[@]}"; do rm -f "$tmp/$n.base" "$tmp/$n.prof"; done
  rm -f "$tmp/round.base"
  for i in $(seq 0 $((runs - 1))); do
    for j in $(seq 0 $((k - 1))); do
      c=$(((i + j) % k))
      # shellcheck disable=SC2086 # the ENV strings are word lists on purpose
      if [ "$c" = 0 ]; then
        one_run round.base $base -- "$@"
      else
        one_run "${names[$((c - 1))]}.prof" ${envs[$((c - 1))]} -- "$@"
      fi
    done
  done
  for n in "${names[@]}"; do cp "$tmp/round.base" "$tmp/$n.base"; done
}

# ---- time ratios at the default rate ---------------------------------------
rounds "X=1" "glibc1=LD_PRELOAD=$lib ALLOCPROF_OPTIONS=$popts" \
  "glibcfast=LD_PRELOAD=$lib ALLOCPROF_OPTIONS=rate=$huge_rate,$popts" \
  "glibcfwd=LD_PRELOAD=$fwd" \
  "glibcrange=LD_PRELOAD=$lib ALLOCPROF_OPTIONS=range=1,$popts" \
  -- mixed "$mixed_ops" 1
paired glibc2 "X=1" "LD_PRELOAD=$lib ALLOCPROF_OPTIONS=$popts" mixed "$mixed_ops" 2
configs="glibc1 glibcfast glibcfwd glibcrange glibc2"
if [ -n "$jem" ]; then
  # Nothing sampled (jemfast): the interposition's fixed cost alone, so the
  # rest of jem1's overhead is what sampling costs.
  rounds "LD_PRELOAD=$jem" "jem1=LD_PRELOAD=$lib:$jem ALLOCPROF_OPTIONS=$popts" \
    "jemfast=LD_PRELOAD=$lib:$jem ALLOCPROF_OPTIONS=rate=$huge_rate,$popts" \
    "jemfwd=LD_PRELOAD=$fwd:$jem" \
    "jemrange=LD_PRELOAD=$lib:$jem ALLOCPROF_OPTIONS=range=1,$popts" \
    "jeprof1=LD_PRELOAD=$jem MALLOC_CONF=prof:true,lg_prof_sample:19" \
    -- mixed "$mixed_ops" 1
  configs="$configs jem1 jemfast jemfwd jemrange jeprof1"
fi

# ---- instructions per non-sampled malloc+free ----------------------------
ir() { # ir N ENV...: callgrind total instructions of `pairs N`
  local n=$1
  shift
  env -u LD_PRELOAD -u ALLOCPROF_OPTIONS "$@" valgrind --tool=callgrind \
    --callgrind-out-file=/dev/null --log-file="$tmp/vg.log" "$bin" pairs "$n" \
    >/dev/null 2>"$tmp/err" || { echo "runtime.sh: callgrind run failed" >&2; cat "$tmp/vg.log" "$tmp/err" >&2; exit 1; }
  [ ! -s "$tmp/err" ] || { echo "runtime.sh: stderr under callgrind:" >&2; cat "$tmp/err" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/vg.log" | head -1
}
cg_env="LD_PRELOAD=$lib ALLOCPROF_OPTIONS=rate=$huge_rate,$popts"
b1=$(ir "$pairs_n1" X=1)
b2=$(ir "$pairs_n2" X=1)
# shellcheck disable=SC2086
p1=$(ir "$pairs_n1" $cg_env)
# shellcheck disable=SC2086
p2=$(ir "$pairs_n2" $cg_env)
rm -f "$tmp"/p.*.pb.gz
ir_base=$(calc %.2f "($b2 - $b1) / ($pairs_n2 - $pairs_n1)")
ir_prof=$(calc %.2f "($p2 - $p1) / ($pairs_n2 - $pairs_n1)")
ir_extra=$(calc %.2f "$ir_prof - $ir_base")

# ---- work per sample at the default rate (cachegrind) ------------------------
# The same mixed workload under cachegrind, at the default rate and with
# nothing sampled, one seed for both: (totals - totals) / samples. Unlike
# the CPU times above, instruction and simulated cache-miss counts repeat
# (to a few instructions a sample over glibc, about 50 over jemalloc, whose
# page purging follows the clock), so a change of a few percent in what a
# sample costs shows here long before it leaves the times' noise.
cg_seed=7
cgrun() { # cgrun TAG PRELOAD [OPTIONS]: "Ir I1mr D1mr D1mw samples"
  env -u LD_PRELOAD -u MALLOC_CONF -u ALLOCPROF_OPTIONS LD_PRELOAD="$2" \
    ALLOCPROF_OPTIONS="${3:+$3,}dump_at_exit=0,seed=$cg_seed,$popts" valgrind --tool=cachegrind \
    --cache-sim=yes --cachegrind-out-file="$tmp/cg.$1" --log-file="$tmp/vg.log" \
    "$bin" mixed "$cg_ops" 1 >"$tmp/line" 2>"$tmp/err" ||
    { echo "runtime.sh: cachegrind run failed" >&2; cat "$tmp/vg.log" "$tmp/err" >&2; exit 1; }
  [ ! -s "$tmp/err" ] || { echo "runtime.sh: stderr under cachegrind:" >&2; cat "$tmp/err" >&2; exit 1; }
  # events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
  awk -v s="$(field samples)" '/^summary:/ { print $2, $3, $6, $9, s }' "$tmp/cg.$1"
  rm -f "$tmp/cg.$1" "$tmp"/p.*.pb.gz
}
cg_per_sample() { # cg_per_sample PRELOAD: "Ir I1mr D1mr D1mw samples" per sample
  local a b
  a=$(cgrun prof "$1") # the default rate
  b=$(cgrun fast "$1" "rate=$huge_rate")
  echo "$a $b" | awk '{ printf "%.0f %.1f %.1f %.1f %d\n", ($1 - $6) / $5, ($2 - $7) / $5, ($3 - $8) / $5, ($4 - $9) / $5, $5 }'
}
cg_glibc=$(cg_per_sample "$lib")
cg_jem=""
[ -z "$jem" ] || cg_jem=$(cg_per_sample "$lib:$jem")

# ---- cost per sample ----------------------------------------------------------
per_sample() { # per_sample NAME OPS: median over pairs of (prof - base) loop CPU ns per op
  # (each pair's value kept in NAME.ns for its interval, ns_ci)
  paste -d' ' <(col "$tmp/$1.prof" 5) <(col "$tmp/$1.base" 5) |
    awk -v n="$2" '{ printf "%.1f\n", ($1 - $2) * 1e9 / n }' >"$tmp/$1.ns"
  median <"$tmp/$1.ns"
}
# ns_ci NAME: "low high" of the sign test's interval for the median of
# NAME.ns (median_ci; 9 pairs: the 2nd to the 8th value, 0.961).
ns_ci() { median_ci "$tmp/$1.ns" | awk '{ printf "%.1f %.1f\n", $1, $2 }'; }
# "low high" as text and as a JSON array
to_text() { echo "$1" | awk '{ printf "%s to %s", $1, $2 }'; }
to_json() { echo "$1" | awk '{ printf "[%s,%s]", $1, $2 }'; }
# verdict_range LOW HIGH TARGET: met when the whole interval is within
# TARGET, missed when all of it is over, undecided otherwise.
verdict_range() {
  awk -v l="$1" -v h="$2" -v t="$3" \
    'BEGIN { print (h <= t) ? "met" : (l > t) ? "**missed**" : "undecided" }'
}
# verdict_ns NAME TARGET: the verdict on NAME.ns's interval.
# shellcheck disable=SC2046 # ns_ci prints "low high": two words on purpose
verdict_ns() { verdict_range $(ns_ci "$1") "$2"; }
declare -A ns
for depth in $depths; do
  for u in $unwinders; do
    # libgcc's samples cost some 50 times more: as many seconds, fewer ops
    n=$deep_ops
    [ "$u" != libgcc ] || n=$((deep_ops / 20))
    npairs=$deep_runs paired "deep.$u.$depth" "X=1" \
      "LD_PRELOAD=$lib ALLOCPROF_OPTIONS=rate=1,unwinder=$u,$popts" deepfp "$n" "$depth"
    ns[$u.$depth]=$(per_sample "deep.$u.$depth" "$n")
  done
  npairs=$deep_runs paired "deep.nofp.$depth" "X=1" \
    "LD_PRELOAD=$lib ALLOCPROF_OPTIONS=rate=1,unwinder=libunwind,$popts" deep "$deep_ops" "$depth"
  ns[nofp.$depth]=$(per_sample "deep.nofp.$depth" "$deep_ops")
done
# At the default rate: median over rounds of the loop time above the same
# round's run with nothing sampled, per sample recorded in the round, in ns.
same_round_ns() { # same_round_ns PROF_CONFIG FAST_CONFIG (values kept in PROF_CONFIG.ns)
  paste -d' ' <(col "$tmp/$1.prof" 5) <(col "$tmp/$2.prof" 5) <(col "$tmp/$1.prof" 4) |
    awk '{ printf "%.1f\n", ($1 - $2) * 1e9 / $3 }' >"$tmp/$1.ns"
  median <"$tmp/$1.ns"
}

# ---- summary --------------------------------------------------------------------
declare -A loop wall rss_b rss_p flt_b flt_p lo hi
for c in $configs; do
  flt_b[$c]=$(col "$tmp/$c.base" 6 | median)
  flt_p[$c]=$(col "$tmp/$c.prof" 6 | median)
  loop[$c]=$(ratio "$c" 5)
  wall[$c]=$(ratio "$c" 1)
  rss_b[$c]=$(col "$tmp/$c.base" 3 | median)
  rss_p[$c]=$(col "$tmp/$c.prof" 3 | median)
  # The loop ratio's interval: the sign test's for the median of the
  # per-round (per-pair) ratios.
  paste -d' ' <(col "$tmp/$c.prof" 5) <(col "$tmp/$c.base" 5) |
    awk '{ printf "%.6f\n", $1 / $2 }' >"$tmp/$c.ratios"
  read -r "lo[$c]" "hi[$c]" ci_conf < <(median_ci "$tmp/$c.ratios")
done
base_ms() { col "$tmp/$1.base" 5 | median | awk '{ printf "%.1f", $1 * 1000 }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r <= t) ? "met" : "**missed**" }'; }
# verdict_ci CONFIG TARGET: the verdict on the loop ratio's interval.
verdict_ci() { verdict_range "${lo[$1]}" "${hi[$1]}" "$2"; }

glibc_ns=$(same_round_ns glibc1 glibcfast)
glibc_ns_ci=$(ns_ci glibc1)
jem_ns=nan jem_ns_ci="nan nan"
if [ -n "$jem" ]; then
  jem_ns=$(same_round_ns jem1 jemfast)
  jem_ns_ci=$(ns_ci jem1)
fi
# What the 1.05x target leaves each sample once interposition is paid at the
# forwarding preload's price: (1.05 - its loop ratio) x plain loop / samples
# recorded (medians), in ns. Negative: the floor alone is over the target.
budget_ns() { # budget_ns PROF_CONFIG FWD_CONFIG [RATIO]: RATIO defaults to the median
  local s
  s=$(col "$tmp/$1.prof" 4 | median)
  calc %.1f "(1.05 - ${3:-${loop[$2]}}) * $(col "$tmp/$1.base" 5 | median) * 1e9 / $s"
}
# and its range over the forwarding preload's interval: "low high"
budget_range() { echo "$(budget_ns "$1" "$2" "${hi[$2]}") $(budget_ns "$1" "$2" "${lo[$2]}")"; }
glibc_budget=$(budget_ns glibc1 glibcfwd)
glibc_budget_range=$(budget_range glibc1 glibcfwd)
jem_budget=nan jem_budget_range="nan nan"
if [ -n "$jem" ]; then
  jem_budget=$(budget_ns jem1 jemfwd)
  jem_budget_range=$(budget_range jem1 jemfwd)
fi
mkdir -p "$out"
{
  printf '{"quick":%s,"runs":%s,"mixed_ops":%s,"pinned_cpu":%s,\n "time":{' "$quick" "$runs" "$mixed_ops" "${pin:-null}"
  sep=""
  for c in $configs; do
    printf '%s"%s":{"loop_ratio":%s,"loop_ratio_ci":[%s,%s],"wall_ratio":%s,"base_loop_ms":%s,"rss_base_kb":%s,"rss_prof_kb":%s,"loop_faults_base":%s,"loop_faults_prof":%s}' \
      "$sep" "$c" "${loop[$c]}" "${lo[$c]}" "${hi[$c]}" "${wall[$c]}" "$(base_ms "$c")" "${rss_b[$c]}" "${rss_p[$c]}" "${flt_b[$c]}" "${flt_p[$c]}"
    sep=","
  done
  printf '},\n "callgrind":{"n1":%s,"n2":%s,"base_ir_per_pair":%s,"prof_ir_per_pair":%s,"extra_ir_per_pair":%s},\n' \
    "$pairs_n1" "$pairs_n2" "$ir_base" "$ir_prof" "$ir_extra"
  printf ' "per_sample_ns":{"ops":%s,"pairs":%s' "$deep_ops" "$deep_runs"
  for k in "${!ns[@]}"; do printf ',"%s":%s' "$k" "${ns[$k]}"; done
  printf '},\n "per_sample_ns_ci":{'
  sep=""
  for k in "${!ns[@]}"; do
    printf '%s"%s":%s' "$sep" "$k" "$(to_json "$(ns_ci "deep.$k")")"
    sep=","
  done
  printf '},\n "cachegrind_per_sample":{"ops":%s,"seed":%s' "$cg_ops" "$cg_seed"
  echo "$cg_glibc" | awk '{ printf ",\"glibc\":{\"ir\":%s,\"i1_misses\":%s,\"d1_read_misses\":%s,\"d1_write_misses\":%s,\"samples\":%s}", $1, $2, $3, $4, $5 }'
  [ -z "$cg_jem" ] || echo "$cg_jem" | awk '{ printf ",\"jemalloc\":{\"ir\":%s,\"i1_misses\":%s,\"d1_read_misses\":%s,\"d1_write_misses\":%s,\"samples\":%s}", $1, $2, $3, $4, $5 }'
  printf '},\n "default_rate_sample_ns":{"glibc1_over_glibcfast":%s,"glibc1_over_glibcfast_ci":%s,"glibc_budget":%s,"glibc_budget_range":%s' \
    "$glibc_ns" "$(to_json "$glibc_ns_ci")" "$glibc_budget" "$(to_json "$glibc_budget_range")"
  [ -z "$jem" ] || printf ',"jem1_over_jemfast":%s,"jem1_over_jemfast_ci":%s,"jem_budget":%s,"jem_budget_range":%s' \
    "$jem_ns" "$(to_json "$jem_ns_ci")" "$jem_budget" "$(to_json "$jem_budget_range")"
  printf '}}\n'
} >"$out/runtime.json"

row() { # row CONFIG LABEL TARGET
  local c=$1
  local extra_kb=$(( ${rss_p[$c]} - ${rss_b[$c]} ))
  printf '| %s | %s ms | %sx | %s-%s | %sx | %s | %s KiB | %s |\n' "$2" "$(base_ms "$c")" \
    "$(calc %.3f "${loop[$c]}")" "$(calc %.3f "${lo[$c]}")" "$(calc %.3f "${hi[$c]}")" \
    "$(calc %.3f "${wall[$c]}")" "$3" "$extra_kb" "$(calc %.0f "${flt_p[$c]} - ${flt_b[$c]}")"
}
cat <<EOF
## Runtime overhead

\`liballocprof_preload.so\` under \`bench/malloc_workload_bench.c\` (mixed: a ring of 4096 live
blocks, each operation frees one and allocates 16-256 B (90%), 256 B-8 KiB (9.9%) or
8-512 KiB (0.1%), writing its first and last byte; $mixed_ops operations). Default rate (512 KiB). Ratios are medians over
$runs rounds of profiled / plain: a round runs the plain program and each configuration of
its allocator once, the order rotated each round (2 threads: $runs interleaved pairs), with the
sign test's $ci_conf confidence interval for the median of the loop ratios; a target is met when
the whole interval is within it, missed when all of it is over, undecided otherwise; "loop" is the timed workload inside the
program (its CPU time, all threads: the other programs of a shared machine inflate wall
times, not this), "process" the whole run's wall time including start-up and the final
profile dump. $( [ -n "$pin" ] && echo "Every single-threaded run is pinned to CPU $pin (\`taskset\`), the faster of this
machine's CPUs in a calibration at the start (\`mixed 2000000\`, median loop CPU time of 3 runs:
$calib): a shared machine's CPUs need not be alike, and unpinned runs landing on either
would make each round's ratio partly chance. The 2-thread runs are not pinned." || echo "Runs are not pinned to a CPU (taskset missing or one CPU).")
The last column is the median, profiled minus plain, of the process's minor page faults
during the timed loop (\`loop_faults\`, getrusage around it): on a virtual machine each
costs several microseconds, so faults the runtime causes (its tables growing, a changed
pattern of the allocator's) are part of its price.

| workload | plain loop | loop ratio | interval | process ratio | target | extra peak RSS | extra loop page faults |
|---|---|---|---|---|---|---|---|
$(row glibc1 "glibc, 1 thread" "<= 1.05x: $(verdict_ci glibc1 1.05)")
$(row glibcfast "of which interposition alone: over glibc, nothing sampled (rate 2^50)" "-")
$(row glibcfwd "reference: a preload that only forwards the malloc family, over glibc" "-")
$(row glibcrange "reference: range=1 (sampled blocks in allocprof's own range, the default until 2026-11-28), over glibc" "-")
$(row glibc2 "glibc, 2 threads (interleaved pairs of their own)" "<= 1.05x: $(verdict_ci glibc2 1.05)")
EOF
if [ -n "$jem" ]; then
  cat <<EOF
$(row jem1 "allocprof over jemalloc, 1 thread" "<= 1.05x: $(verdict_ci jem1 1.05)")
$(row jemfast "of which interposition alone: allocprof over jemalloc, nothing sampled (rate 2^50)" "-")
$(row jemfwd "reference: a preload that only forwards the malloc family, over jemalloc" "-")
$(row jemrange "reference: range=1 (sampled blocks in allocprof's own range), over jemalloc" "-")
$(row jeprof1 "reference: jemalloc's own profiler (prof:true, lg_prof_sample:19) vs jemalloc" "-")
EOF
else
  echo
  echo "jemalloc (libjemalloc2) is not installed: its rows were not measured."
fi
cat <<EOF

| fast path (callgrind, pairs kernel, nothing sampled: rate 2^50) | Ir per malloc+free pair |
|---|---|
| glibc alone | $ir_base |
| under allocprof | $ir_prof |
| **added by allocprof** (target <= 12: $(verdict "$ir_extra" 12)) | **$ir_extra** |

Measured as the difference of runs with $pairs_n1 and $pairs_n2 pairs, so start-up cancels.

| cost per sample (rate=1: every malloc(64) sampled and freed at once), ns per sampled malloc+free | fp | libgcc | libunwind | libunwind, program without frame pointers |
|---|---|---|---|---|
EOF
cell() { echo "${ns[$1]} ($(to_text "$(ns_ci "deep.$1")"))"; }
for depth in $depths; do
  echo "| $depth frames of recursion before each malloc | $(cell "fp.$depth") | $(cell "libgcc.$depth") | $(cell "libunwind.$depth") | $(cell "nofp.$depth") |"
done
cat <<EOF

Per-sample cost is (profiled loop CPU time - plain loop CPU time) / samples ($deep_ops,
libgcc $((deep_ops / 20))), median of $deep_runs paired runs; in parentheses the sign test's interval for that median
($(median_ci "$tmp/deep.libunwind.32.ns" | awk '{ print $3 }') confidence). Target at depth 32 with libunwind, the default: <= 1000 ns:
$(verdict_ns deep.libunwind.32 1000) (met when the whole interval is within it, missed when all of it is over).
It includes everything a sample costs at rate=1: the unwind, the stack table lookup, the
live-table insert and the matching removal on free. The recursion (\`deepfp\`) is built with
frame pointers, so fp sees every level and libunwind takes its frame-pointer fast path down
to libc's start of main; the last column is the same recursion built without them
(\`deep\`), which libunwind alone unwinds.

At the default rate, everything included: $glibc_ns ns per sample over glibc (interval
$(to_text "$glibc_ns_ci"))$( [ -z "$jem" ] || echo ", $jem_ns ns over jemalloc ($(to_text "$jem_ns_ci"))"):
the median over rounds of (profiled loop CPU time - nothing-sampled loop CPU time) / samples
recorded, both runs from the same round, with the sign test's interval for that median
($ci_conf). A sample is a small difference between two long runs, so on a shared machine
the interval is wide: treat differences between runs of the suite inside it as noise.

What a sample does at the default rate, counted instead of timed: cachegrind on the same
workload ($cg_ops operations), at the default rate and with nothing sampled, one seed
($cg_seed) for both, no exit dump; the difference per sample recorded. Over glibc two runs agree
to within a few instructions and a tenth of a miss per sample (start-up differs a little);
over jemalloc, whose purging of unused pages follows the clock, to about 50 instructions
and 5 misses.
The misses are those of cachegrind's simulated first-level caches
(this machine's sizes): between two samples the program's own 4096 live blocks push the
runtime's code and data out of them, so a sample's time goes mostly to lines it has to
fetch again, and the allocator's to fetching back what the sample pushed out.

| per sample at the default rate (cachegrind) | instructions | I1 misses | D1 read misses | D1 write misses | samples |
|---|---:|---:|---:|---:|---:|
$(echo "$cg_glibc" | awk '{ printf "| over glibc | %s | %s | %s | %s | %s |", $1, $2, $3, $4, $5 }')$( [ -z "$cg_jem" ] || echo; [ -z "$cg_jem" ] || echo "$cg_jem" | awk '{ printf "| over jemalloc | %s | %s | %s | %s | %s |", $1, $2, $3, $4, $5 }')

The forwarding preload (\`bench/forward_preload.c\`) defines malloc, calloc, realloc and free
and only passes each call on to the allocator underneath: its row is what interposition
costs before anything is sampled, a floor for any profiler that sits behind these symbols.
The suite checks that it exports them: until 2026-11-28 the project's hidden default
visibility kept them local, so the preload interposed nothing and its row was the program alone.
What the 1.05x target then leaves a sample, (1.05 - the forwarding preload's loop ratio) x
plain loop / samples recorded: $glibc_budget ns over glibc ($(to_text "$glibc_budget_range") over the
forwarding preload's interval)$( [ -z "$jem" ] || echo ", $jem_budget ns over jemalloc ($(to_text "$jem_budget_range"))")
(negative: interposition alone is over the target), against the measured cost per sample
at the default rate above.
EOF
