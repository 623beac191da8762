#!/usr/bin/env bash
# Histogram suite: what recording into ap_hist costs (bench/hist_bench.c).
# See bench/run for the contract:
#   bash hist.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/hist.json and prints the "## Histograms" section.
#
# - ns per record, per-thread CPU time, medians over rounds; every round runs
#   all variants back to back, and the ratios are medians of per-round
#   ratios, so both sides of a ratio saw the same machine. Value stream:
#   16384 lognormal values (median 256, sigma 1.5) replayed, sigbits 5.
# - Instructions per record under callgrind: totals at N1 and N2 records,
#   (I(N2) - I(N1)) / (N2 - N1), so set-up cancels exactly; the harness
#   loop is included on both sides.
# - Memory: ap_hist_memory at sigbits 5 after values spread over 1e3..1e10.
# - Peers: hg64-style and HdrHistogram-style recording paths, the bench's own
#   minimal re-implementations (bench/hist_bench.c says what each does), in
#   the same binary, rounds and value stream.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
bench=$build/bench/hist_bench
[ -x "$bench" ] || { echo "hist.sh: $bench not built" >&2; exit 1; }
if [ "$quick" = 1 ]; then rounds=3; else rounds=11; fi

time_json=$("$bench" time "$rounds")
mem_json=$("$bench" memory)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_bench_hist.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n1=200000 n2=400000
declare -A ipr
modes="limit_index limit_key limit_call recorder recorder_inline batch shared hg64 hdr hdr_atomic"
if command -v valgrind >"$tmp/which"; then
  for mode in $modes; do
    ir() {
      valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.out" \
        "$bench" count "$mode" "$1" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    }
    a=$(ir $n1) b=$(ir $n2)
    ipr[$mode]=$(awk -v a="$a" -v b="$b" -v n=$((n2 - n1)) 'BEGIN { printf "%.1f", (b - a) / n }')
  done
else
  for mode in $modes; do ipr[$mode]=null; done
fi

get() { # get JSON KEY: a number from one flat JSON object
  sed -n "s/.*\"$2\":\([-0-9.e]*\).*/\1/p" <<<"$1"
}
cat > "$out/hist.json" <<JSON
{"time":$time_json,"memory":$mem_json,"instructions_per_record":{"limit_index":${ipr[limit_index]},"limit_key":${ipr[limit_key]},"limit_call":${ipr[limit_call]},"recorder":${ipr[recorder]},"recorder_inline":${ipr[recorder_inline]},"batch":${ipr[batch]},"shared":${ipr[shared]},"hg64":${ipr[hg64]},"hdr":${ipr[hdr]},"hdr_atomic":${ipr[hdr_atomic]}}}
JSON

t() { get "$time_json" "$1"; }
ratio() { # ratio A B: A / B to two decimals, n/a without callgrind
  awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'
}
cat <<MD
## Histograms

Recording one value at sigbits 5 (\`bench/hist_bench.c\`, $rounds rounds;
ns are per-thread CPU time per record, medians; every round runs every
row back to back on the same 16384 lognormal values). The limit is a
plain \`counts[i]++\`: with the bucket index precomputed
(\`limit_index\`), with the key computed inline on a dense array
(\`limit_key\`, a histogram without lazy memory, sum, min or max), and
the same behind a function call (\`limit_call\`) as any library's record
is. The peers are the benchmark's own minimal re-implementations of two
libraries' recording paths (neither is a Debian package, so neither is
vendored; bench/hist_bench.c documents what each does): **hg64-style**
(log-linear key from the top bits, lazily allocated chunk of atomic
counters, one relaxed fetch-add; no sum, min or max) and
**HdrHistogram-style** (counts index from the leading-zero count and the
sub-bucket, range check, counter, total count and min/max updated
non-atomically as \`hdr_record_value\` does, or with atomic adds and
compare-and-swap loops as \`hdr_record_value_atomic\` does; no sum). Both
are called out of line, like \`ap_hist_add\`. Every \`ap_hist\` row keeps
the exact count, sum, sum of squares, min and max.

| variant | ns/record | instructions/record (callgrind) |
|---|---:|---:|
| limit: counts[i]++ (index precomputed) | $(t limit_index_ns) | ${ipr[limit_index]} |
| limit: counts[key(v)]++ (dense array) | $(t limit_key_ns) | ${ipr[limit_key]} |
| limit: the same in an out-of-line function | $(t limit_call_ns) | ${ipr[limit_call]} |
| **shared \`ap_hist_add\`, 1 thread** | $(t shared_ns) | ${ipr[shared]} |
| **shared \`ap_hist_add\`, 2 threads on one histogram** | $(t shared2_ns) | |
| per-thread recorder, inline (\`ap_hist_recorder_add_inline\`) | $(t recorder_inline_ns) | ${ipr[recorder_inline]} |
| per-thread recorder, out of line (\`ap_hist_recorder_add\`) | $(t recorder_ns) | ${ipr[recorder]} |
| per-thread recorder, batches of 16384 (\`ap_hist_recorder_add_many\`) | $(t batch_ns) | ${ipr[batch]} |
| per-thread recorders, inline, 2 threads | $(t recorder2_ns) | |
| hg64-style record (one relaxed fetch-add), 1 thread | $(t hg64_ns) | ${ipr[hg64]} |
| hg64-style record, 2 threads on one histogram | $(t hg64_2_ns) | |
| HdrHistogram-style \`hdr_record_value\` (not atomic) | $(t hdr_ns) | ${ipr[hdr]} |
| HdrHistogram-style \`hdr_record_value_atomic\` | $(t hdr_atomic_ns) | ${ipr[hdr_atomic]} |

| ratio (median of per-round ratios) | value | target |
|---|---:|---:|
| shared 1 thread / hg64-style 1 thread | $(t shared_over_hg64) | <= 1 |
| shared 2 threads / hg64-style 2 threads | $(t shared2_over_hg64_2) | <= 1 |
| shared 1 thread / HdrHistogram-style atomic | $(t shared_over_hdr_atomic) | |
| recorder (out of line) / HdrHistogram-style | $(t recorder_over_hdr) | <= 1 |
| shared 2 threads / shared 1 thread | $(t shared2_over_shared) | <= 3 |
| recorder_inline / limit_key | $(t recorder_inline_over_limit_key) | <= 2 |
| recorder_inline / limit_index | $(t recorder_inline_over_limit_index) | |
| recorder (out of line) / limit_key | $(t recorder_over_limit_key) | |
| recorder (out of line) / limit_call | $(t recorder_over_limit_call) | |
| batch / limit_key | $(t batch_over_limit_key) | |
| shared 1 thread / limit_index | $(t shared_over_limit_index) | |

Counted in instructions, shared / hg64-style is $(ratio "${ipr[shared]}" "${ipr[hg64]}"),
recorder_inline / limit_key $(ratio "${ipr[recorder_inline]}" "${ipr[limit_key]}") and
recorder / limit_key $(ratio "${ipr[recorder]}" "${ipr[limit_key]}"). Instruction counts
include the benchmark's loop (the whole of \`limit_index\`) and count a
locked read-modify-write as one instruction, which is why the hg64-style row
is cheaper in instructions than in time: \`ap_hist_add\` runs more
instructions than the hg64-style record but none of them is atomic (the
per-thread recorder it finds through a thread-local cache,
docs/HISTOGRAMS.md), so no two threads ever write one cache line.

Memory at sigbits 5 for values spread over 1e3..1e10, recorded by one
thread with \`ap_hist_add\`: $(get "$mem_json" bytes) bytes (the histogram, that
thread's recorder and 25 exponents of counters; each further thread
recording at the same time adds a recorder and the exponents it touches).

The 2-thread figures are CPU time per thread: on this shared, loaded 2-core
machine the two threads are not guaranteed to run at the same instant; in
the median round they overlapped for $(t shared2_overlap) of the run's wall
time, so contention (which costs the hg64-style path, whose threads
fetch-add the same counters, and not \`ap_hist_add\`) shows only to that
extent. Load average at the end of the run: $(cut -d' ' -f1-3 /proc/loadavg).
MD
