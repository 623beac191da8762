#!/usr/bin/env bash
# Attach suite: what `allocprof attach` and the dormant mode cost
# (docs/ATTACH.md). See bench/run for the contract:
#   bash attach.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/attach.json and prints the "## Attach and dormant mode"
# section.
#
# - Instructions per malloc+free pair (callgrind, repeatable): totals of
#   bench/attach_bench with N1 and N2 pairs, (T(N2) - T(N1)) / (N2 - N1) so
#   start-up cancels: plain; preloaded dormant (rate=off); attached with
#   nothing sampled (rate 2^50: the hooks alone); attached at the default
#   rate; after a detach (the hooks stay, sampling off). The attach itself
#   is made in-process (what the command makes the target's thread do):
#   valgrind cannot be ptrace-attached to.
# - Time the target is stopped: `allocprof attach -d 0.3` on a running
#   malloc_workload_bench (4 threads allocating): the thread chosen for the
#   remote calls is stopped for the dlopen, for ap_runtime_attach and for
#   ap_runtime_detach (the command's own report, medians over the runs);
#   the other threads keep running.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
bench=$build/bench/attach_bench
work=$build/bench/malloc_workload_bench
lib=$build/liballocprof_preload.so
cli=$build/allocprof
for f in "$bench" "$work" "$cli"; do
  [ -x "$f" ] || { echo "attach.sh: $f not built" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "attach.sh: valgrind is required" >&2; exit 1; }
if [ "$quick" = 1 ]; then n1=100000 n2=300000 runs=3; else n1=200000 n2=1200000 runs=9; fi
huge=1125899906842624
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_bench_attach.XXXXXX")
trap 'rm -rf "$tmp"; [ -z "${wpid:-}" ] || kill "$wpid" 2>/dev/null || true' EXIT

median() {
  sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print a[(NR + 1) / 2]; else printf "%.9g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

ir() { # ir MODE N ENV...: callgrind total instructions
  local mode=$1 n=$2
  shift 2
  env -u LD_PRELOAD -u ALLOCPROF_OPTIONS AP_RUNTIME="$lib" "$@" valgrind --tool=callgrind \
    --callgrind-out-file=/dev/null --log-file="$tmp/vg.log" "$bench" "$mode" "$n" \
    >/dev/null 2>"$tmp/err" || { echo "attach.sh: callgrind run failed" >&2; cat "$tmp/vg.log" "$tmp/err" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/vg.log" | head -1
}
per_pair() { # per_pair MODE ENV...
  local a b
  a=$(ir "$1" "$n1" "${@:2}")
  b=$(ir "$1" "$n2" "${@:2}")
  awk -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" 'BEGIN { printf "%.2f", (b - a) / (n2 - n1) }'
}
o="output=$tmp/p.%p.%n.pb.gz"
plain=$(per_pair plain X=1)
dormant=$(per_pair plain LD_PRELOAD="$lib" ALLOCPROF_OPTIONS="rate=off,$o")
hooks=$(per_pair attached AP_ATTACH_OPTIONS="rate=$huge,dump_at_exit=0,$o")
sampling=$(per_pair attached AP_ATTACH_OPTIONS="dump_at_exit=0,$o")
detached=$(per_pair detached AP_ATTACH_OPTIONS="$o")

# ---- time stopped ------------------------------------------------------------
"$work" mixed 4000000000 4 >/dev/null 2>&1 &
wpid=$!
sleep 0.5
for i in $(seq "$runs"); do
  "$cli" attach -d 0.3 -o "$tmp/a.%p.%n.pb.gz" "$wpid" 2>"$tmp/attach.log" ||
    { echo "attach.sh: attach failed: $(cat "$tmp/attach.log")" >&2; exit 1; }
  sed -n 's/.*attached to [0-9]* (stopped \([0-9.]*\) + \([0-9.]*\) ms).*/\1 \2/p' "$tmp/attach.log" >>"$tmp/stops"
  sed -n 's/.*detached from [0-9]* (stopped \([0-9.]*\) ms).*/\1/p' "$tmp/attach.log" >>"$tmp/dstops"
done
kill "$wpid"
wait "$wpid" 2>/dev/null || true
wpid=
dl_ms=$(awk '{ print $1 }' "$tmp/stops" | median)
at_ms=$(awk '{ print $2 }' "$tmp/stops" | median)
de_ms=$(median <"$tmp/dstops")
# the first attach loads the runtime; later ones find it loaded (0 ms)
first_dl=$(head -1 "$tmp/stops" | awk '{ print $1 }')

cat >"$out/attach.json" <<JSON
{"pairs": [$n1, $n2], "ir_per_pair": {"plain": $plain, "dormant": $dormant,
 "attached_hooks_only": $hooks, "attached_default_rate": $sampling, "detached": $detached},
 "stopped_ms": {"first_dlopen": $first_dl, "attach_call_median": $at_ms,
 "detach_call_median": $de_ms, "runs": $runs}}
JSON

cat <<MD
## Attach and dormant mode

Instructions per \`malloc(32)\`+\`free\` pair under callgrind
(\`bench/attach_bench\`, $n1 and $n2 pairs, difference so start-up cancels;
the attach is made in-process, as the command makes the target's thread
do it):

| configuration | instructions/pair | over plain |
|---|---|---|
| plain glibc | $plain | |
| preloaded, dormant (\`rate=off\`) | $dormant | $(awk -v a="$dormant" -v b="$plain" 'BEGIN { printf "%+.2f", a - b }') |
| attached, nothing sampled (hooks only) | $hooks | $(awk -v a="$hooks" -v b="$plain" 'BEGIN { printf "%+.2f", a - b }') |
| attached, default rate (512 KiB) | $sampling | $(awk -v a="$sampling" -v b="$plain" 'BEGIN { printf "%+.2f", a - b }') |
| after detach (hooks stay, sampling off) | $detached | $(awk -v a="$detached" -v b="$plain" 'BEGIN { printf "%+.2f", a - b }') |

Time the target's chosen thread is stopped (\`allocprof attach -d 0.3\` on
\`malloc_workload_bench mixed\`, 4 threads allocating; the other threads
keep running), as the command reports it, over $runs attach/detach cycles
on one process: the first attach's dlopen $first_dl ms (later attaches find
the runtime loaded); \`ap_runtime_attach\` median $at_ms ms (it patches the
GOTs, starts sampling); \`ap_runtime_detach\` median $de_ms ms (it writes
the final profile).
MD
