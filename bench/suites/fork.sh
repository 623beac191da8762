#!/usr/bin/env bash
# Fork suite: what the runtime adds to each child of a fork-per-request
# server (bench/fork_bench.c: the parent keeps 8 MiB, each child allocates
# 1 MiB and exits, writing its own profile). See bench/run for the contract:
#   bash fork.sh BUILD_DIR OUT_DIR QUICK(0|1)
# writes OUT_DIR/fork.json and prints the "## Fork-per-request servers"
# section.
#
# Configurations, run once each per round, the order rotated every round:
# plain; the runtime writing into an empty directory; the same with
# PREFILL files already in the directory (a server's earlier children's
# profiles: the cost of a child must not grow with them); fork=stop (the
# children neither sample nor write). Each value is the median over rounds
# of the program's own wall time per child (the fork loop alone); the
# interval is the sign test's for the median of the per-round differences
# from plain.
set -euo pipefail
build=$1 out=$2 quick=${3:-0}
bin=$build/bench/fork_bench
lib=$build/liballocprof_preload.so
[ -x "$bin" ] || { echo "fork.sh: $bin not built" >&2; exit 1; }
[ -r "$lib" ] || { echo "fork.sh: $lib not built" >&2; exit 1; }
if [ "$quick" = 1 ]; then
  rounds=5 children=100 prefill=1000
else
  rounds=11 children=300 prefill=3000
fi
child_bytes=1048576
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_bench_fork.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../lib/paired.sh"  # median, calc
. "$(dirname "$0")/../lib/shift.sh"   # median_ci

# one_run TAG DIR ENV...: fork_bench with the environment assignments ENV,
# profiles into DIR (emptied of the run's own profiles afterwards, its
# prefilled files kept); appends the microseconds per child to $tmp/TAG.
one_run() {
  local tag=$1 dir=$2
  shift 2
  env -u LD_PRELOAD -u ALLOCPROF_OPTIONS "$@" "$bin" "$children" "$child_bytes" \
    >"$tmp/line" 2>"$tmp/err" || { echo "fork.sh: run failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
  [ ! -s "$tmp/err" ] || { echo "fork.sh: stderr from $*:" >&2; cat "$tmp/err" >&2; exit 1; }
  sed -n 's/.* per_child_us=\([^ ]*\).*/\1/p' "$tmp/line" >>"$tmp/$tag"
  find "$dir" -name 'run.*' -delete
}

mkdir "$tmp/d_empty" "$tmp/d_full"
# Earlier children's profiles, named as the runtime names them.
seq "$prefill" | sed "s|^|$tmp/d_full/p.|; s|$|.pb.gz|" | xargs touch
configs=(plain empty full stop)
run_config() {
  case $1 in
    plain) one_run plain "$tmp/d_empty" ;;
    empty) one_run empty "$tmp/d_empty" LD_PRELOAD="$lib" ALLOCPROF_OPTIONS="output=$tmp/d_empty/run.%p.pb.gz" ;;
    full) one_run full "$tmp/d_full" LD_PRELOAD="$lib" ALLOCPROF_OPTIONS="output=$tmp/d_full/run.%p.pb.gz" ;;
    stop) one_run stop "$tmp/d_empty" LD_PRELOAD="$lib" ALLOCPROF_OPTIONS="output=$tmp/d_empty/run.%p.pb.gz,fork=stop" ;;
  esac
}
for r in $(seq "$rounds"); do
  for i in 0 1 2 3; do
    run_config "${configs[$(( (i + r) % 4 ))]}"
  done
done

med() { median <"$tmp/$1"; }
# diff_ci TAG: the sign-test interval of the per-round TAG - plain.
diff_ci() {
  paste -d' ' "$tmp/$1" "$tmp/plain" | awk '{ printf "%.1f\n", $1 - $2 }' >"$tmp/$1.d"
  median_ci "$tmp/$1.d"
}
plain=$(med plain)
{
  echo "{"
  echo "  \"rounds\": $rounds, \"children\": $children, \"child_bytes\": $child_bytes, \"prefill\": $prefill,"
  for c in plain empty full stop; do
    echo "  \"$c\": [$(paste -sd, "$tmp/$c")]$([ $c = stop ] || echo ,)"
  done
  echo "}"
} >"$out/fork.json"

echo "## Fork-per-request servers"
echo
echo "\`bench/fork_bench\`: the parent keeps 8 MiB, then forks $children children one after"
echo "another; each allocates 1 MiB in 16 KiB blocks and exits with \`exit()\`, so under the"
echo "runtime (default options: fork=follow) each writes its own profile. Wall time of the fork"
echo "loop per child, medians over $rounds rounds that run every configuration once, the order"
echo "rotated each round; the added cost's interval is the sign test's for the median of the"
echo "per-round differences from plain."
echo
echo "| configuration | us per child | added to plain | interval |"
echo "|---|---:|---:|---|"
echo "| plain | $plain | - | - |"
row() {
  read -r lo hi conf < <(diff_ci "$1")
  echo "| $2 | $(med "$1") | $(calc "%.1f" "$(med "$1") - $plain") | $lo to $hi ($conf) |"
}
row empty "runtime, profiles into an empty directory"
row full "runtime, $prefill earlier profiles in the directory"
row stop "runtime with fork=stop (children neither sample nor write)"
echo
echo "A child's cost is its exit dump (the memory figures from /proc, the mapping list, the"
echo "file written with O_TMPFILE, fsync and a link), the copy-on-write faults on the runtime's"
echo "pages it touches, and its first samples. It does not grow with the directory: only the"
echo "process the runtime started in scans it for dead writers' temporary files, once, and the"
echo "loaded objects' paths are resolved at start-up and inherited, not resolved again by"
echo "every child."
