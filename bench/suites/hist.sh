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
modes="limit_index limit_key limit_call recorder recorder_inline batch shared"
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
{"time":$time_json,"memory":$mem_json,"instructions_per_record":{"limit_index":${ipr[limit_index]},"limit_key":${ipr[limit_key]},"limit_call":${ipr[limit_call]},"recorder":${ipr[recorder]},"recorder_inline":${ipr[recorder_inline]},"batch":${ipr[batch]},"shared":${ipr[shared]}}}
JSON

t() { get "$time_json" "$1"; }
ratio() { # ratio A B: A / B to two decimals, n/a without callgrind
  awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'
}
cat <<MD
## Histograms

Recording one value into an \`ap_hist\` at sigbits 5 (\`bench/hist_bench.c\`,
$rounds rounds; ns are per-thread CPU time per record, medians). The limit
is a plain \`counts[i]++\` over the same value stream: with the bucket index
precomputed (\`limit_index\`), and with the key computed inline on a dense
array (\`limit_key\`, a histogram without lazy memory, sum, min or max),
also behind a function call (\`limit_call\`) as any library's record is.
The per-thread recorder is measured both ways a program can call it:
\`ap_hist_recorder_add_inline\` (the common case compiled into the
caller's loop, allocprof/hist.h) and \`ap_hist_recorder_add\` (a call into
the library).

| variant | ns/record | instructions/record (callgrind) |
|---|---:|---:|
| limit: counts[i]++ (index precomputed) | $(t limit_index_ns) | ${ipr[limit_index]} |
| limit: counts[key(v)]++ (dense array) | $(t limit_key_ns) | ${ipr[limit_key]} |
| limit: the same in an out-of-line function | $(t limit_call_ns) | ${ipr[limit_call]} |
| per-thread recorder, inline (\`ap_hist_recorder_add_inline\`) | $(t recorder_inline_ns) | ${ipr[recorder_inline]} |
| per-thread recorder, out of line (\`ap_hist_recorder_add\`) | $(t recorder_ns) | ${ipr[recorder]} |
| per-thread recorder, batches of 16384 (\`ap_hist_recorder_add_many\`) | $(t batch_ns) | ${ipr[batch]} |
| shared, atomic, 1 thread (\`ap_hist_add\`) | $(t shared_ns) | ${ipr[shared]} |
| shared, atomic, 2 threads on one histogram | $(t shared2_ns) | |
| per-thread recorders, inline, 2 threads | $(t recorder2_ns) | |

| ratio (median of per-round ratios) | value | target |
|---|---:|---:|
| recorder_inline / limit_index | $(t recorder_inline_over_limit_index) | |
| recorder_inline / limit_key | $(t recorder_inline_over_limit_key) | <= 2 |
| recorder (out of line) / limit_key | $(t recorder_over_limit_key) | |
| recorder (out of line) / limit_call | $(t recorder_over_limit_call) | |
| batch / limit_key | $(t batch_over_limit_key) | |
| shared 1 thread / limit_index | $(t shared_over_limit_index) | |
| shared 2 threads / shared 1 thread | $(t shared2_over_shared) | <= 3 |

Memory at sigbits 5 for values spread over 1e3..1e10: $(get "$mem_json" bytes) bytes
(target <= 8192). Instruction counts include the benchmark's loop (the
whole of \`limit_index\`); the recorder keeps exact count, sum, sum of
squares, min and max on every record, which the limits do not. Counted in
instructions, recorder_inline / limit_key is $(ratio "${ipr[recorder_inline]}" "${ipr[limit_key]}")
and recorder / limit_key $(ratio "${ipr[recorder]}" "${ipr[limit_key]}"). The shared
path picks its sum stripe with \`sched_getcpu\`, which natively reads the
CPU number glibc keeps through rseq; valgrind does not support rseq, so
under callgrind glibc falls back to a slower lookup (about 30 of the shared
row's instructions, not paid natively, as its ns show). The
2-thread figures are CPU time per thread: on this shared, loaded 2-core
machine the two threads are not guaranteed to run at the same instant; in
the median round they overlapped for $(t shared2_overlap) of the run's wall
time, so contention shows only to that extent. Load average at the end of
the run: $(cut -d' ' -f1-3 /proc/loadavg).
MD
