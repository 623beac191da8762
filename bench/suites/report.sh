#!/usr/bin/env bash
# Report suite: how long `allocprof report` takes to symbolize and report a
# large profile, beside jeprof --text on the same data as heap_v2. See
# bench/run for the contract:
#   bash report.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/report.json and prints the "## Report speed" section.
#
# The profile (bench/report_gen_bench.c): 100,000 (stack, size) samples over
# 5,000 stacks of depth 8-24 whose 20,000 distinct addresses are spread over
# the code of a large binary (/usr/bin/python3, libpython linked in; the
# allocprof CLI itself when python3 is missing), so symbolization meets
# thousands of functions. Timed, as wall-clock medians of several runs:
#   - report: `allocprof report --alloc PROFILE` (decode, symbolize with
#     libdw, aggregate, intervals, print);
#   - report, no symbolization: the same with --no-symbolize;
#   - jeprof: `jeprof --text BINARY PROFILE.heap` on `convert --to heap_v2`
#     output (jeprof symbolizes with nm/addr2line and re-unbiases).
# The ratio is jeprof's median over report's.
#
# Second, DWARF-rich C++: bench/workloads/lambdas.cc (300 lambdas in
# std::function, each inlining std::string, std::to_string and std::map
# code, one compilation unit that includes <regex>), built here with
# g++ -O2 -g, run under the runtime at rate 1 (every allocation), and its
# profile's `allocprof report --alloc` timed the same way: there the time
# goes to libdw's DWARF (inline chains of the addresses' compile unit),
# not to symbol tables. Without g++ that row is nan.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
cli=$build/allocprof
gen=$build/bench/report_gen_bench
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$cli" ] || { echo "report.sh: $cli not built" >&2; exit 1; }
[ -x "$gen" ] || { echo "report.sh: $gen not built" >&2; exit 1; }
if [ "$quick" = 1 ]; then runs=3 jruns=1; else runs=7 jruns=3; fi
target=$(readlink -f /usr/bin/python3 2>/dev/null || true)
[ -n "$target" ] && [ -x "$target" ] || target=$(readlink -f "$cli")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_bench_report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

median() {
  sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print a[(NR + 1) / 2]; else printf "%.9g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# timed N CMD...: wall seconds of N runs of CMD (stdout discarded), one a line
timed() {
  local n=$1 i t0 t1
  shift
  for ((i = 0; i < n; i++)); do
    t0=$(date +%s%N)
    "$@" > /dev/null 2>&1
    t1=$(date +%s%N)
    awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f\n", ns / 1e9 }'
  done
}

"$gen" "$target" "$tmp/p.pb.gz" 100000 5000
"$cli" convert --to heap_v2 "$tmp/p.pb.gz" -o "$tmp/p.heap"
"$cli" report --alloc "$tmp/p.pb.gz" > /dev/null # warm the page cache
report=$(timed "$runs" "$cli" report --alloc "$tmp/p.pb.gz" | median)
nosym=$(timed "$runs" "$cli" report --alloc --no-symbolize "$tmp/p.pb.gz" | median)
if command -v jeprof > /dev/null; then
  jeprof_t=$(timed "$jruns" jeprof --text "$target" "$tmp/p.heap" | median)
else
  jeprof_t=nan
fi
# The C++ workload: built, profiled at rate 1 without symbolizing (report
# does that), its distinct addresses counted from the unsymbolized stacks.
cxx=nan cxx_addrs=0
if command -v g++ > /dev/null &&
  g++ -std=c++17 -O2 -g -o "$tmp/lambdas" "$here/workloads/lambdas.cc" &&
  "$cli" run -q -r 1 --no-symbolize -o "$tmp/cxx.pb.gz" -- "$tmp/lambdas" > /dev/null; then
  cxx_addrs=$("$cli" convert --to folded --alloc --no-symbolize "$tmp/cxx.pb.gz" |
    sed 's/ [0-9]*$//' | tr ';' '\n' | sort -u | wc -l)
  "$cli" report --alloc "$tmp/cxx.pb.gz" > /dev/null
  cxx=$(timed "$runs" "$cli" report --alloc "$tmp/cxx.pb.gz" | median)
fi
ratio=$(awk -v a="$jeprof_t" -v b="$report" 'BEGIN { if (a == "nan" || b <= 0) print "nan"; else printf "%.1f", a / b }')
size=$(stat -c %s "$tmp/p.pb.gz")
hsize=$(stat -c %s "$tmp/p.heap")

cat > "$out/report.json" <<EOF
{"suite":"report","binary":"$target","samples":100000,"stacks":5000,
 "profile_bytes":$size,"heap_v2_bytes":$hsize,"runs":$runs,"jeprof_runs":$jruns,
 "report_s":$report,"report_nosym_s":$nosym,"jeprof_s":$jeprof_t,"jeprof_over_report":"$ratio",
 "cxx_workload":"bench/workloads/lambdas.cc","cxx_addresses":$cxx_addrs,"cxx_report_s":${cxx/nan/null}}
EOF

cat <<EOF
## Report speed

\`allocprof report --alloc\` on a profile of 100,000 samples over 5,000 stacks
(20,000 distinct code addresses of \`$target\`, depth 8-24; $((size / 1024)) KiB
gzip'd pprof), beside \`jeprof --text\` on the same data converted to heap_v2
($((hsize / 1024)) KiB). Wall-clock medians ($runs runs; jeprof $jruns).

| command | median (s) |
|---|---|
| allocprof report (decode, libdw symbolization, intervals) | $report |
| allocprof report --no-symbolize | $nosym |
| jeprof --text (heap_v2) | $jeprof_t |
| jeprof / allocprof report | $ratio |

Target: report under 2 s. Symbolization is the difference between the first
two rows; libdw's symbol lookup (dwfl_module_addrinfo) dominates it.

DWARF-rich C++: \`allocprof report --alloc\` on the rate-1 profile of
\`bench/workloads/lambdas.cc\` (300 lambdas in std::function, \`<regex>\` and
\`<map>\` in one compilation unit; g++ -O2 -g), $cxx_addrs distinct code
addresses. Each address needs its chain of inlined functions from the
DWARF of its compilation unit, which the symbolizer indexes once per unit
(src/cli/dwindex.c) instead of walking the unit from its start for every
address.

| command | median (s) |
|---|---|
| allocprof report, C++ with DWARF | $cxx |
EOF
