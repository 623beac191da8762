#!/usr/bin/env bash
# Accuracy suite: how close allocprof's sampled estimates come to the truth,
# next to jemalloc's profiler at the same rate, and how a fixed-stride
# sampler fares on a periodic pattern. See bench/run for the contract:
#   bash accuracy.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/accuracy.json, bench/plots/error_vs_samples.png and
# bench/plots/coverage.png, and prints the "## Accuracy" section.
#
# Per workload (bench/lib/tools.sh):
# - truth: allocprof at rate=1 over glibc (every allocation recorded exactly),
#   `allocprof report --alloc --json --top 0`; for jemalloc, which profiles
#   usable sizes (its size classes), also a rate=1 run over jemalloc read
#   with --usable;
# - allocprof at the default rate (512 KiB) with seeds 1..K, same report;
# - jemalloc's profiler at the same rate (prof:true, prof_accum:true,
#   lg_prof_sample:19, prof_final:true), K runs, `jeprof --text --alloc_space
#   --show_bytes`.
# Sites are matched by function name (allocprof's first frame outside the
# allocator; jeprof's flat entry). The rate=1 totals are cross-checked on
# the multi-threaded workload against heaptrack and gperftools' HEAPPROFILE,
# which both record every allocation.
# Then bench/stride_bench simulates a fixed-stride sampler against
# allocprof's on a periodic pattern, and the error and interval coverage
# against the number of samples.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/tools.sh
source "$here/lib/tools.sh"
stride=$build/bench/stride_bench
[ -x "$stride" ] || { echo "accuracy.sh: $stride is not built" >&2; exit 1; }

if [ "$quick" = 1 ]; then
  seeds=2 stride_reps=200 curve_reps=200 curve_max=2000
else
  seeds=10 stride_reps=2000 curve_reps=2000 curve_max=10000
fi
data=$tmp/data
mkdir -p "$data" "$tmp/o"

# profile_run ALLOCATOR OPTS OUTFILE: run the current workload (WL_*) under
# allocprof over ALLOCATOR (glibc or jemalloc) with runtime options OPTS,
# leaving the profile in OUTFILE.
profile_run() {
  local preload=$ap_lib opts=$2 file=$3
  [ "$1" = jemalloc ] && preload=$ap_lib:$jemalloc
  run_measured "$tmp/log" "$tmp/res" "${WL_ENV[@]}" "LD_PRELOAD=$preload" \
    "ALLOCPROF_OPTIONS=$opts,output=$file" -- "${WL_CMD[@]}"
  [ -s "$file" ] || { echo "accuracy.sh: no profile $file" >&2; cat "$tmp/log" >&2; exit 1; }
}

# report FILE [ARGS]: the JSON report of every site.
report() {
  local f=$1
  shift
  "$ap_cli" report --alloc --json --top 0 "$@" "$f" 2>"$tmp/rlog" ||
    { echo "accuracy.sh: allocprof report failed on $f" >&2; cat "$tmp/rlog" >&2; exit 1; }
}

for w in $WORKLOADS; do
  workload_cmd "$w"
  echo "accuracy: $w" >&2
  profile_run glibc rate=1 "$tmp/truth.pb.gz"
  report "$tmp/truth.pb.gz" >"$data/truth_$w.json"
  profile_run jemalloc rate=1 "$tmp/truthje.pb.gz"
  report "$tmp/truthje.pb.gz" --usable >"$data/truthje_$w.json"
  rm -f "$tmp"/truth*.pb.gz
  bin=$(readlink -f "$(command -v "${WL_CMD[0]}")")
  for k in $(seq "$seeds"); do
    profile_run glibc "seed=$k" "$tmp/ap.pb.gz"
    report "$tmp/ap.pb.gz" >"$data/ap_${w}_$k.json"
    rm -f "$tmp/ap.pb.gz"
    run_measured "$tmp/log" "$tmp/res" "${WL_ENV[@]}" "LD_PRELOAD=$jemalloc" \
      "MALLOC_CONF=$jemalloc_prof,prof_accum:true,prof_prefix:$tmp/o/je" -- "${WL_CMD[@]}"
    heap=$(find "$tmp/o" -name 'je.*.heap' | head -1)
    [ -n "$heap" ] || { echo "accuracy.sh: jemalloc wrote no profile for $w" >&2; exit 1; }
    jeprof --text --alloc_space --show_bytes "$bin" "$heap" >"$data/je_${w}_$k.txt" 2>"$tmp/jlog" ||
      { echo "accuracy.sh: jeprof failed on $heap" >&2; cat "$tmp/jlog" >&2; exit 1; }
    rm -f "$tmp"/o/*
  done
done

# Cross-check of the rate=1 totals on the multi-threaded workload.
workload_cmd xthread
config_cmd heaptrack "$tmp/o"
run_measured "$tmp/log" "$tmp/res" "${WL_ENV[@]}" -- "${CF_WRAP[@]}" "${WL_CMD[@]}"
heaptrack_print -f "$(find "$tmp/o" -name 'ht*' | head -1)" -H "$tmp/hist.txt" -p 0 -a 0 -T 0 >/dev/null 2>"$tmp/hlog" ||
  { echo "accuracy.sh: heaptrack_print failed" >&2; cat "$tmp/hlog" >&2; exit 1; }
awk '{ n += $2; b += $1 * $2 } END { printf "heaptrack %d %d\n", n, b }' "$tmp/hist.txt" >"$data/cross.txt"
rm -f "$tmp"/o/*
config_cmd heapprofile "$tmp/o"
run_measured "$tmp/log" "$tmp/res" "${WL_ENV[@]}" "${CF_ENV[@]}" -- "${WL_CMD[@]}"
# The last dump (at exit) carries the cumulative totals: "[ allocs: bytes]".
last=$(find "$tmp/o" -name 'hp.*.heap' | sort | tail -1)
head -1 "$last" | sed -n 's/.*\[ *\([0-9]*\): *\([0-9]*\)\].*/heapprofile \1 \2/p' >>"$data/cross.txt"

"$stride" stride "$stride_reps" >"$data/sim.jsonl"
"$stride" curve "$curve_reps" "$curve_max" >>"$data/sim.jsonl"

mkdir -p "$out"
python3 "$here/lib/accuracy_tables.py" "$data" "$seeds" "$quick" "$WORKLOADS" \
  "$out/accuracy.json" "$tmp/plot" "$(for w in $WORKLOADS; do printf '%s\t%s\n' "$w" "${WL_DESC[$w]}"; done)"
if command -v gnuplot >/dev/null; then
  for p in error_vs_samples coverage; do
    gnuplot -e "dir='$tmp/plot'; outfile='$here/plots/$p.png'" "$here/plots/$p.gp"
  done
else
  echo "accuracy: gnuplot (gnuplot-nox) missing: plots not updated" >&2
fi
