#!/usr/bin/env bash
# preload_allocators_test.sh: the runtime on top of jemalloc, tcmalloc
# (minimal and full gperftools) and mimalloc, preloaded in the order
# LD_PRELOAD="liballocprof_preload.so liballocator.so". The 16-thread stress
# test, the forking program and python3 must behave exactly as they do with
# that allocator alone, and every profile must decode. (Exact per-site
# numbers on each allocator: tests/unit/run_exact_test.c.)
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

P=$AP_PROGDIR
PY=$(command -v /usr/bin/python3 || command -v python3 || true)
export PYTHONHASHSEED=0
tested=0

# run_on ALLOC NAME CMD...: CMD with ALLOC alone vs runtime + ALLOC.
run_on() { over_alloc 180 11 "$@"; }

for soname in libjemalloc.so.2 libtcmalloc_minimal.so.4 libtcmalloc.so.4 libmimalloc.so.2; do
	alloc=$(lib_path "$soname")
	if [ -z "$alloc" ]; then
		echo "$soname not installed: not tested" >&2
		continue
	fi
	tag=${soname%%.so*}
	run_on "$alloc" "stress_$tag" "$P/stress_threads" 2 10000
	run_on "$alloc" "forker_$tag" "$P/forker"
	[ -z "$PY" ] || run_on "$alloc" "python_$tag" "$PY" -c \
		'import json; d=[{"k": i, "v": "x" * (i % 300)} for i in range(50000)]; print(len(json.dumps(d)))'
	echo "$soname: ok" >&2
	tested=$((tested + 1))
done
[ $tested -gt 0 ] || skip "none of jemalloc, tcmalloc, mimalloc is installed"
echo "allocators: ok ($tested)"
