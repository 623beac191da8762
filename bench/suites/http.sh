#!/usr/bin/env bash
# HTTP suite: what the runtime's HTTP endpoint (ALLOCPROF_OPTIONS http=)
# adds to a profiled malloc-heavy program that is scraped every second, the
# way Prometheus and a continuous profiler would. See bench/run for the
# contract:
#   bash http.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/http.json and prints the "## HTTP endpoint overhead" section.
#
# The program is bench/malloc_workload_bench (mixed mode, the runtime
# suite's workload). Four configurations run as interleaved rounds whose
# order rotates, so drift on this shared machine hits all of them alike:
#   base   plain,
#   prof   under the runtime at the default rate, no endpoint,
#   metr   the same with http=0 while a scraper fetches /metrics once per
#          second (what Prometheus does),
#   heap   the same, fetching /metrics and /debug/pprof/heap once per
#          second (far more often than continuous profilers pull profiles).
# Ratios are medians of the per-round ratios of the timed loop (the
# program's own clock). Then one more profiled run measures how long each
# endpoint takes to answer (curl's total time) and reads the endpoint's own
# allocprof_http_busy_seconds_total / allocprof_http_requests_total.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
bin=$build/bench/malloc_workload_bench
lib=$build/liballocprof_preload.so
[ -x "$bin" ] || { echo "http.sh: $bin not built" >&2; exit 1; }
[ -r "$lib" ] || { echo "http.sh: $lib not built" >&2; exit 1; }
command -v curl >/dev/null || { echo "http.sh: curl is required" >&2; exit 1; }

if [ "$quick" = 1 ]; then
  runs=5 ops=30000000
else
  runs=9 ops=120000000
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_bench_http.XXXXXX")
scraper=
cleanup() {
  [ -z "$scraper" ] || kill "$scraper" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

median() {
  sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print a[(NR + 1) / 2]; else printf "%.9g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$tmp/line"; }

# scrape ADDR WITH_HEAP: every second, /metrics (and /debug/pprof/heap).
scrape() {
  while :; do
    curl -s --max-time 5 -o /dev/null "http://$1/metrics" || true
    [ "$2" = 0 ] || curl -s --max-time 5 -o /dev/null "http://$1/debug/pprof/heap" || true
    sleep 1
  done
}

# one_run CONFIG: append the loop seconds to $tmp/CONFIG.
one_run() {
  local cfg=$1 opts="dump_at_exit=0"
  local envs=(env -u LD_PRELOAD -u ALLOCPROF_OPTIONS)
  case $cfg in
    prof) envs+=(LD_PRELOAD="$lib" ALLOCPROF_OPTIONS="$opts") ;;
    metr|heap) rm -f "$tmp/port"
          envs+=(LD_PRELOAD="$lib" ALLOCPROF_OPTIONS="$opts,http=0,http_portfile=$tmp/port") ;;
  esac
  "${envs[@]}" "$bin" mixed "$ops" 1 >"$tmp/line" 2>"$tmp/err" &
  local pid=$!
  if [ "$cfg" = metr ] || [ "$cfg" = heap ]; then
    local i
    for i in $(seq 100); do
      [ -s "$tmp/port" ] && break
      sleep 0.05
    done
    [ -s "$tmp/port" ] || { echo "http.sh: no port file" >&2; cat "$tmp/err" >&2; exit 1; }
    scrape "$(cat "$tmp/port")" "$([ "$cfg" = heap ] && echo 1 || echo 0)" &
    scraper=$!
  fi
  wait "$pid" || { echo "http.sh: $cfg run failed" >&2; cat "$tmp/err" >&2; exit 1; }
  if [ -n "$scraper" ]; then
    kill "$scraper" 2>/dev/null || true
    wait "$scraper" 2>/dev/null || true
    scraper=
  fi
  field seconds >>"$tmp/$cfg"
}

order=(base prof metr heap)
for i in $(seq "$runs"); do
  for k in 0 1 2 3; do
    one_run "${order[$(( (i + k) % 4 ))]}"
  done
done

# Response times: one more profiled run; 5 fetches of each endpoint while it
# works, medians of curl's total time (connect to last byte, loopback).
rm -f "$tmp/port"
env -u LD_PRELOAD LD_PRELOAD="$lib" ALLOCPROF_OPTIONS="dump_at_exit=0,http=0,http_portfile=$tmp/port" \
  "$bin" mixed "$ops" 1 >/dev/null 2>"$tmp/err" &
rt_pid=$!
for i in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
addr=$(cat "$tmp/port")
sleep 1
for i in 1 2 3 4 5; do
  curl -s --max-time 10 -o /dev/null -w '%{time_total}\n' "http://$addr/metrics" >>"$tmp/t.metrics"
  curl -s --max-time 10 -o "$tmp/heap.pb.gz" -w '%{time_total}\n' "http://$addr/debug/pprof/heap" >>"$tmp/t.heap"
done
curl -s --max-time 10 -o "$tmp/last.metrics" "http://$addr/metrics"
kill "$rt_pid" 2>/dev/null || true
wait "$rt_pid" 2>/dev/null || true
ms_metrics=$(awk '{ printf "%.2f\n", $1 * 1000 }' "$tmp/t.metrics" | median)
ms_heap=$(awk '{ printf "%.2f\n", $1 * 1000 }' "$tmp/t.heap" | median)
heap_kib=$(( $(stat -c %s "$tmp/heap.pb.gz") / 1024 ))

ratio() { # ratio A B: median over rounds of A/B
  paste -d' ' "$tmp/$1" "$tmp/$2" | awk '{ printf "%.6f\n", $1 / $2 }' | median
}
r_metr_prof=$(ratio metr prof)
r_metr_base=$(ratio metr base)
r_heap_prof=$(ratio heap prof)
r_heap_base=$(ratio heap base)
r_prof_base=$(ratio prof base)
m_base=$(median <"$tmp/base")
m_prof=$(median <"$tmp/prof")
m_metr=$(median <"$tmp/metr")
m_heap=$(median <"$tmp/heap")
metric() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/last.metrics" 2>/dev/null; }
sites=$(metric allocprof_sites)
reqs=$(metric allocprof_http_requests_total)
busy=$(metric allocprof_http_busy_seconds_total)
busy=$(awk -v b="${busy:-0}" 'BEGIN { printf "%.3f", b }')
per_req_ms=$(awk -v b="${busy:-0}" -v r="${reqs:-0}" 'BEGIN { if (r > 0) printf "%.2f", b * 1000 / r; else print "nan" }')

cat >"$out/http.json" <<EOF
{"suite":"http","quick":$quick,"runs":$runs,"ops":$ops,
 "loop_seconds_median":{"base":$m_base,"prof":$m_prof,"metrics":$m_metr,"metrics_heap":$m_heap},
 "ratio_metrics_over_prof":$r_metr_prof,"ratio_metrics_over_base":$r_metr_base,
 "ratio_metrics_heap_over_prof":$r_heap_prof,"ratio_metrics_heap_over_base":$r_heap_base,
 "ratio_prof_over_base":$r_prof_base,
 "response_ms_median":{"metrics":$ms_metrics,"heap":$ms_heap},"heap_kib":$heap_kib,
 "sites":${sites:-0},"busy_ms_per_request":"$per_req_ms"}
EOF

cat <<EOF
## HTTP endpoint overhead

The runtime's HTTP endpoint (\`http=0\`) scraped once per second while
\`malloc_workload_bench mixed $ops 1\` runs (${runs} interleaved rounds,
rotating order; medians of per-round ratios of the timed loop). The
endpoint's thread sleeps in \`poll\` between requests, so its cost is the
responses it builds, on the machine's other core when one is free.

| configuration | loop seconds (median) | ratio |
|---|---|---|
| plain | $m_base | 1 |
| runtime, default rate | $m_prof | $r_prof_base vs plain |
| + endpoint, \`/metrics\` every second | $m_metr | $r_metr_prof vs runtime, $r_metr_base vs plain |
| + endpoint, \`/metrics\` and \`/debug/pprof/heap\` every second | $m_heap | $r_heap_prof vs runtime, $r_heap_base vs plain |

Time to answer while the workload runs (median of 5, loopback, curl's total):
\`/metrics\` ${ms_metrics} ms, \`/debug/pprof/heap\` ${ms_heap} ms (${heap_kib} KiB
gzip'd, ${sites:-0} sites: the bench's many distinct sizes make one site
each; the profile is built exactly as a dump file is). The endpoint
counted ${busy:-0} s of response building for ${reqs:-0} requests
(${per_req_ms} ms each on average).
EOF
