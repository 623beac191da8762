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
if [ ! -r "$lib" ] || ! "$cli" run --help >/dev/null 2>&1; then
	# A partial build without the runtime: show the sampler and estimators
	# on a simulated allocation stream instead.
	if [ -x "$build/examples/simulate" ]; then
		echo "demo: runtime not built; showing the simulated example" >&2
		exec "$build/examples/simulate"
	fi
	echo "demo: neither the runtime nor examples/simulate was built" >&2
	exit 1
fi

out=$build/demo
rm -f "$out"/demo.*.pb.gz
run_args=(-o "$out/demo.%p.pb.gz" -e seed=1)
[ -n "${DEMO_RATE:-}" ] && run_args+=(-r "$DEMO_RATE")
have_report=0
"$cli" report --help >/dev/null 2>&1 && have_report=1
# With the report command the summary of `run` would repeat it: keep quiet.
[ $have_report = 1 ] && run_args+=(-q)

echo "\$ $cli run ${run_args[*]} -- $demo" >&2
"$cli" run "${run_args[@]}" -- "$demo"

profiles=("$out"/demo.*.pb.gz)
[ -e "${profiles[0]}" ] || { echo "demo: no profile was written" >&2; exit 1; }
if [ $have_report = 1 ]; then
	# Without arguments: what the program still held at exit (its leak and
	# big arrays), then where it allocated (parser, pool, cache).
	views=("$*")
	[ $# -eq 0 ] && views=("" "--alloc")
	for v in "${views[@]}"; do
		echo "\$ $cli report${v:+ $v} ${profiles[*]}" >&2
		# shellcheck disable=SC2086 # v holds report options, split on purpose
		"$cli" report $v "${profiles[@]}"
	done
fi
