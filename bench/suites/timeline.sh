#!/usr/bin/env bash
# Timeline suite: what `timeline=` costs a malloc-heavy program
# (bench/malloc_workload_bench.c), against the runtime without it, and the
# memory it holds. See bench/run for the contract:
#   bash timeline.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/timeline.json and prints the "## Timeline overhead" section.
#
# - Time ratios: the mixed workload under the runtime (default rate) with
#   timeline=1s against the same without it, as paired runs whose order
#   alternates; the ratio is the median of the per-pair ratios (loop time
#   inside the program, and the whole process). timeline=10ms is measured
#   the same way: a hundred ticks a second, to make the cost of a tick
#   visible if there is one.
# - Memory: peak RSS (getrusage maxrss) medians, with minus without; the
#   ring's bound from docs/TIME.md for comparison.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
bin=$build/bench/malloc_workload_bench
lib=$build/liballocprof_preload.so
[ -x "$bin" ] || { echo "timeline.sh: $bin not built" >&2; exit 1; }
[ -r "$lib" ] || { echo "timeline.sh: $lib not built" >&2; exit 1; }
if [ "$quick" = 1 ]; then
  runs=7 mixed_ops=10000000
else
  runs=21 mixed_ops=40000000
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_bench_timeline.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
popts="output=$tmp/p.%p.pb.gz"

. "$(dirname "$0")/../lib/paired.sh" # median, col, ratio, calc
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$tmp/line"; }

# one_run TAG OPTIONS: the mixed workload under the runtime with
# ALLOCPROF_OPTIONS=OPTIONS; appends "wall loop rss" to $tmp/TAG.
one_run() {
  local tag=$1 opts=$2 t0 t1
  t0=$(date +%s%N)
  env -u MALLOC_CONF LD_PRELOAD="$lib" ALLOCPROF_OPTIONS="$opts" "$bin" mixed "$mixed_ops" 1 \
    >"$tmp/line" 2>"$tmp/err" || { echo "timeline.sh: run failed: $opts" >&2; cat "$tmp/err" >&2; exit 1; }
  t1=$(date +%s%N)
  [ ! -s "$tmp/err" ] || { echo "timeline.sh: stderr with $opts:" >&2; cat "$tmp/err" >&2; exit 1; }
  echo "$(( (t1 - t0) / 1000 ))e-6 $(field seconds) $(field maxrss_kb)" >>"$tmp/$tag"
  rm -f "$tmp"/p.*.pb.gz
}

# paired NAME OPTIONS: $runs interleaved pairs, without and with OPTIONS.
paired() {
  local name=$1 with=$2
  rm -f "$tmp/$name.base" "$tmp/$name.prof"
  for i in $(seq "$runs"); do
    if [ $((i % 2)) = 1 ]; then
      one_run "$name.base" "$popts"
      one_run "$name.prof" "$popts,$with"
    else
      one_run "$name.prof" "$popts,$with"
      one_run "$name.base" "$popts"
    fi
  done
}

paired t1s timeline=1s
paired t10ms timeline=10ms

declare -A loop wall rss_b rss_p base_ms
for c in t1s t10ms; do
  loop[$c]=$(ratio "$c" 2)
  wall[$c]=$(ratio "$c" 1)
  rss_b[$c]=$(col "$tmp/$c.base" 3 | median)
  rss_p[$c]=$(col "$tmp/$c.prof" 3 | median)
  base_ms[$c]=$(col "$tmp/$c.base" 2 | median | awk '{ printf "%.1f", $1 * 1000 }')
done
# The ring's bound (docs/TIME.md): SERIES_POINTS x sizeof(point).
ring_kib=$(calc %.0f "256 * 1712 / 1024")

mkdir -p "$out"
{
  printf '{"quick":%s,"runs":%s,"mixed_ops":%s,"ring_bound_kib":%s,"time":{' \
    "$quick" "$runs" "$mixed_ops" "$ring_kib"
  sep=""
  for c in t1s t10ms; do
    printf '%s"%s":{"loop_ratio":%s,"wall_ratio":%s,"base_loop_ms":%s,"rss_base_kb":%s,"rss_prof_kb":%s}' \
      "$sep" "$c" "${loop[$c]}" "${wall[$c]}" "${base_ms[$c]}" "${rss_b[$c]}" "${rss_p[$c]}"
    sep=","
  done
  printf '}}\n'
} >"$out/timeline.json"

row() { # row CONFIG LABEL
  local c=$1
  printf '| %s | %s ms | %sx | %sx | %s KiB |\n' "$2" "${base_ms[$c]}" \
    "$(calc %.3f "${loop[$c]}")" "$(calc %.3f "${wall[$c]}")" \
    "$(( ${rss_p[$c]} - ${rss_b[$c]} ))"
}
cat <<EOF
## Timeline overhead

\`timeline=\` (docs/TIME.md) under \`bench/malloc_workload_bench.c\` mixed, $mixed_ops
operations, 1 thread, glibc, default rate: the runtime with the timeline against the
runtime without it. Ratios are medians over $runs interleaved pairs (with / without);
"loop" is the timed workload inside the program, "process" the whole run (the final dump
then also writes the timeline, the peak and the lifetimes).

| option | loop without | loop ratio | process ratio | extra peak RSS |
|---|---|---|---|---|
$(row t1s "timeline=1s")
$(row t10ms "timeline=10ms (100 ticks a second)")

The ring is bounded by 256 points x 1712 bytes = $ring_kib KiB whatever the run's length
(docs/TIME.md); a tick walks the sites under the stack table's lock, which only sampled
allocations take, so the malloc fast path never waits for it.
EOF
