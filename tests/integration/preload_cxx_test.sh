#!/usr/bin/env bash
# preload_cxx_test.sh: C++ programs under the runtime at the default rate,
# over glibc, jemalloc, tcmalloc and mimalloc (each preloaded after the
# runtime). exact_cxx (operator new/delete in every form, std::string,
# std::vector, std::map; exact at rate 1: tests/unit/run_exact_test.c) must
# print the same and exit the same as with the allocator alone;
# mismatch_free (malloc then delete, new then free, on blocks the runtime
# samples) must not crash. Every profile must decode.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

P=$AP_PROGDIR
tested=0

# same ALLOC NAME CMD...: CMD with ALLOC alone vs runtime + ALLOC.
same() { over_alloc 120 7 "$@"; }

for soname in glibc libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2; do
	alloc=
	if [ "$soname" != glibc ]; then
		alloc=$(lib_path "$soname")
		if [ -z "$alloc" ]; then
			echo "$soname not installed: not tested" >&2
			continue
		fi
	fi
	tag=${soname%%.so*}
	same "$alloc" "cxx_$tag" "$P/exact_cxx" --sites-only
	same "$alloc" "mismatch_$tag" "$P/mismatch_free"
	echo "$soname: ok" >&2
	tested=$((tested + 1))
done
echo "cxx: ok ($tested)"
