#!/usr/bin/env bash
# Suite "runtime_internals": the preload runtime's own building blocks.
#  - free() fast path: callgrind instructions per lookup of a non-sampled
#    pointer in the lock-free sampled set (design 1) against design 2's
#    address-range test and the granule filter (what the runtime's free
#    does: one load, and the set lookup in granules that hold a set
#    entry), and per
#    insert+remove pair (a sampled allocation's set cost), all as
#    differences to the bare loop;
#  - stack capture: ns per capture at depths 8, 32 and 64 for libunwind (with
#    its frame-pointer fast path), libgcc, frame pointers and libunwind alone
#    (medians of several runs), and callgrind instructions per capture at
#    depth 32 (the difference of two run lengths, so start-up cancels).
# Usage (from bench/run): bash runtime_internals.sh BUILD_DIR OUT_DIR QUICK
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
b=$build/bench
n=1000000 reps=20000 runs=7
if [ "$quick" = 1 ]; then n=200000 reps=4000 runs=3; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ir() { # total instructions of a run under callgrind
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$@" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$tmp/cg.out"
}
per_op() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.1f", (a - b) / n }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

base=$(ir "$b/sampled_set_bench" baseline "$n")
miss=$(ir "$b/sampled_set_bench" set-miss "$n" 1000)
range=$(ir "$b/sampled_set_bench" range-check "$n")
filt=$(ir "$b/sampled_set_bench" filter-check "$n" 1000)
insrem=$(ir "$b/sampled_set_bench" insert-remove "$n" 1000)
miss_ir=$(per_op "$miss" "$base" "$n")
range_ir=$(per_op "$range" "$base" "$n")
filt_ir=$(per_op "$filt" "$base" "$n")
insrem_ir=$(per_op "$insrem" "$base" "$n")

: > "$tmp/ns"
for _ in $(seq "$runs"); do
  for m in baseline set-miss range-check filter-check insert-remove; do
    "$b/sampled_set_bench" "$m" "$n" 1000 >> "$tmp/ns"
  done
  for d in 8 32 64; do
    "$b/unwind_bench" "$d" "$reps" | sed "s/^/d$d./" >> "$tmp/ns"
  done
done
kinds="libunwind libgcc fp libunwind-only"
declare -A u_ns u_fr u_ir
for k in $kinds; do
  a=$(ir "$b/unwind_bench" 32 1000 "$k")
  c=$(ir "$b/unwind_bench" 32 3000 "$k")
  u_ir[$k]=$(per_op "$c" "$a" 2000)
done
med() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' "$tmp/ns" | median; }
ns_base=$(med baseline 3) ns_miss=$(med set-miss 3) ns_range=$(med range-check 3)
ns_filt=$(med filter-check 3)
ns_insrem=$(med insert-remove 3)
for d in 8 32 64; do
  for k in $kinds; do
    u_ns[$k.$d]=$(med "d$d.$k" 3)
    u_fr[$k.$d]=$(med "d$d.$k" 2)
  done
done
json_map() { # json_map ARRAY-NAME: {"key":value,...}
  local -n m=$1
  local sep="" k
  printf '{'
  for k in "${!m[@]}"; do printf '%s"%s":%s' "$sep" "$k" "${m[$k]}"; sep=","; done
  printf '}'
}

cat > "$out/runtime_internals.json" <<JSON
{"suite":"runtime_internals","n":$n,"runs":$runs,
 "free_check_instructions":{"sampled_set_miss":$miss_ir,"address_range":$range_ir,"granule_filter":$filt_ir},
 "sampled_set_insert_remove_instructions":$insrem_ir,
 "free_check_ns":{"loop":$ns_base,"sampled_set_miss":$ns_miss,"address_range":$ns_range,"granule_filter":$ns_filt},
 "sampled_set_insert_remove_ns":$ns_insrem,
 "unwind_ns":$(json_map u_ns),
 "unwind_frames":$(json_map u_fr),
 "unwind_instructions_depth32":$(json_map u_ir)}
JSON

cat <<MD
## Runtime internals

The preload runtime's building blocks, measured alone (\`bench/sampled_set_bench\`,
\`bench/unwind_bench\`; $n operations, medians of $runs runs for times).

**free() fast path** — "was this pointer sampled?" for a pointer that was not,
with 1000 sampled pointers live. Instructions are callgrind totals minus the bare
loop, divided by the number of operations.

| check | instructions | ns (median) |
|---|---:|---:|
| design 1: lock-free sampled-address set, miss | $miss_ir | $ns_miss |
| design 2: allocprof-owned address range, subtract+compare | $range_ir | $ns_range |
| granule filter, and the set lookup behind a nonzero byte (the runtime's free) | $filt_ir | $ns_filt |
| (bare loop, for reference) | 0 | $ns_base |
| design 1: insert + remove of a sampled pointer | $insrem_ir | $ns_insrem |

The runtime's free tests only the granule filter (\`src/preload/runtime_core.h\`): the
byte of the pointer's 8 KiB window, nonzero where an entry of the set (design 1, the
default: sampled blocks the allocator keeps) starts and where allocprof's range (design 2,
\`range=1\`: at a thread rate of 16 KiB or more, sampled blocks below 64 KiB are page runs
there) is claimed; only then does it look further. Here 1000 live
entries spread over the bench's 1 GiB of addresses make about 0.8% of its windows nonzero. The range's price: its blocks cost whole pages, and the allocator
underneath does not know them (its statistics miss them; its own entry points that take
a block are interposed). The whole fast path's cost is in "Runtime overhead" (callgrind,
malloc+free pairs).

**Stack capture** (\`bench/unwind_bench\`: a recursion built with frame pointers, one capture
repeated; median ns over $runs runs of $reps captures, frames found at depth 8 / 32 / 64, and
callgrind instructions per capture at depth 32):

| unwinder | depth 8 | depth 32 | depth 64 | frames | Ir at 32 |
|---|---:|---:|---:|---|---:|
| libunwind (the default: frame-pointer fast path, libunwind below it) | ${u_ns[libunwind.8]} | ${u_ns[libunwind.32]} | ${u_ns[libunwind.64]} | ${u_fr[libunwind.8]} / ${u_fr[libunwind.32]} / ${u_fr[libunwind.64]} | ${u_ir[libunwind]} |
| libgcc \`_Unwind_Backtrace\` | ${u_ns[libgcc.8]} | ${u_ns[libgcc.32]} | ${u_ns[libgcc.64]} | ${u_fr[libgcc.8]} / ${u_fr[libgcc.32]} / ${u_fr[libgcc.64]} | ${u_ir[libgcc]} |
| frame pointers | ${u_ns[fp.8]} | ${u_ns[fp.32]} | ${u_ns[fp.64]} | ${u_fr[fp.8]} / ${u_fr[fp.32]} / ${u_fr[fp.64]} | ${u_ir[fp]} |
| libunwind alone (\`unw_backtrace\`, what the default was before its fast path) | ${u_ns[libunwind-only.8]} | ${u_ns[libunwind-only.32]} | ${u_ns[libunwind-only.64]} | ${u_fr[libunwind-only.8]} / ${u_fr[libunwind-only.32]} / ${u_fr[libunwind-only.64]} | ${u_ir[libunwind-only]} |

The default is libunwind: it sees through code built without frame pointers (Debian's libc
and most distribution binaries). Its fast path walks frame records for as long as each
function on the way sets up a frame pointer (checked once per return address) and lets
libunwind take over at the first that does not: each return address below it is stepped
by libunwind once, and walked afterwards by the frame rule learned from that step (where
the caller's frame and saved %rbp are), or reused whole while its stack slots are
unchanged (libc's start of main or of a thread); so on a program built with
frame pointers it costs little more than \`unwinder=fp\` and finds libunwind's frames
(fp stops at libc's first frame). Capture is most of a sample's cost but not all of it:
"Runtime overhead" has the whole cost per sample.
MD
