#!/usr/bin/env bash
# Compare suite: what allocprof and the profilers users would pick instead
# (jemalloc's prof, gperftools' HEAPPROFILE, heaptrack, valgrind massif) cost
# on the same workloads, side by side. See bench/run for the contract:
#   bash compare.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/compare.json and bench/plots/overhead.png, and prints the
# "## Overhead against other profilers" section.
#
# Method: every workload (bench/lib/tools.sh) runs under every configuration
# in rounds; within a round the configurations run one after another in an
# order rotated by one each round, so drift on this shared machine reaches
# every configuration alike. Each profiled run is paired with the unprofiled
# run of the same round on the same allocator (allocprof over glibc vs
# glibc, over jemalloc vs jemalloc; jemalloc prof vs jemalloc; HEAPPROFILE
# vs tcmalloc; heaptrack and massif vs glibc); a ratio is the median of the
# per-round ratios. Wall time, CPU time (user+sys) and peak RSS come from
# bench/runstat_bench (getrusage of the run and its descendants). The three
# slow tools (10-100x) run in fewer rounds than the others, paired with the
# same rounds' baselines.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib/tools.sh
source "$here/lib/tools.sh"

if [ "$quick" = 1 ]; then rounds=3 slow_rounds=1; else rounds=15 slow_rounds=3; fi
slow=" heapprofile heaptrack massif "
read -r -a configs <<<"$CONFIGS"
n=${#configs[@]}
raw=$tmp/raw.tsv
: >"$raw"
mkdir -p "$tmp/o"
for r in $(seq "$rounds"); do
  for w in $WORKLOADS; do
    workload_cmd "$w"
    for k in $(seq 0 $((n - 1))); do
      c=${configs[$(((k + r) % n))]}
      if [[ $slow == *" $c "* ]] && [ "$r" -gt "$slow_rounds" ]; then continue; fi
      config_cmd "$c" "$tmp/o"
      run_measured "$tmp/log" "$tmp/res" "${WL_ENV[@]}" "${CF_ENV[@]}" -- \
        "${CF_WRAP[@]}" "${WL_CMD[@]}"
      size=$(find "$tmp/o" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
      files=$(find "$tmp/o" -type f | wc -l)
      echo "$w $c $r $(cat "$tmp/res") $size $files" >>"$raw"
      rm -rf "${tmp:?}/o/"*
    done
  done
  echo "compare: round $r of $rounds done" >&2
done

descs=$tmp/desc.tsv
for w in $WORKLOADS; do printf 'workload\t%s\t%s\n' "$w" "${WL_DESC[$w]}"; done >"$descs"
for c in $CONFIGS; do
  printf 'config\t%s\t%s\t%s\n' "$c" "${BASE[$c]}" "${CONF_DESC[$c]:-$c, unprofiled}"
done >>"$descs"
mkdir -p "$out"
python3 "$here/lib/compare_tables.py" "$raw" "$descs" "$out/compare.json" "$tmp/plot.dat" \
  "$rounds" "$slow_rounds" "$quick"
if command -v gnuplot >/dev/null; then
  gnuplot -e "datafile='$tmp/plot.dat'; outfile='$here/plots/overhead.png'" \
    "$here/plots/overhead.gp"
else
  echo "compare: gnuplot (gnuplot-nox) missing: bench/plots/overhead.png not updated" >&2
fi
