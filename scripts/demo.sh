#!/usr/bin/env bash
# The main job: build if needed, run the bundled demo program (demo/demo.c)
# under the heap profiler and print its report.
#
#   build/allocprof run -o build/demo/demo.%p.pb.gz -- build/demo/demo
#   build/allocprof report build/demo/demo.<pid>.pb.gz
#
# Works from a fresh clone: scripts/deps.sh installs what the build needs
# (as root). Arguments go to `allocprof report` (default: the inuse view,
# then --alloc).
# Env: BUILD_DIR (default build), DEMO_RATE (default: the runtime's default).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
build=${BUILD_DIR:-build}
cmake -S . -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

cli=$build/allocprof
lib=$build/liballocprof_preload.so
demo=$build/demo/demo
[ -r "$lib" ] || { echo "demo: $lib was not built" >&2; exit 1; }

out=$build/demo
rm -f "$out"/demo.*.pb.gz
# -q: the summary of `run` would repeat the reports printed below.
run_args=(-q -o "$out/demo.%p.pb.gz" -e seed=1)
[ -n "${DEMO_RATE:-}" ] && run_args+=(-r "$DEMO_RATE")

echo "\$ $cli run ${run_args[*]} -- $demo" >&2
"$cli" run "${run_args[@]}" -- "$demo"

profiles=("$out"/demo.*.pb.gz)
[ -e "${profiles[0]}" ] || { echo "demo: no profile was written" >&2; exit 1; }
# Without arguments: what the program still held at exit (its leak and big
# arrays), then where it allocated (parser, pool, cache).
views=("$*")
[ $# -eq 0 ] && views=("" "--alloc")
for v in "${views[@]}"; do
	echo "\$ $cli report${v:+ $v} ${profiles[*]}" >&2
	# shellcheck disable=SC2086 # v holds report options, split on purpose
	"$cli" report $v "${profiles[@]}"
done
