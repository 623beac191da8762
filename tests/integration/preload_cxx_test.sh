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
same() {
	local alloc=$1 name=$2
	shift 2
	local dir=$TMP/prof/$name st_plain=0 st_prof=0
	mkdir -p "$dir"
	bounded 120 env LD_PRELOAD="$alloc" "$@" >"$TMP/$name.plain" 2>&1 || st_plain=$?
	bounded 120 env LD_PRELOAD="$LIB $alloc" \
		ALLOCPROF_OPTIONS="seed=7,output=$dir/p.%p.pb.gz" "$@" \
		>"$TMP/$name.prof" 2>&1 || st_prof=$?
	[ "$st_plain" = 0 ] || fail "$name: fails even without the runtime ($st_plain)"
	[ "$st_prof" = 0 ] || fail "$name: exit status $st_prof under the runtime: $(tail -3 "$TMP/$name.prof")"
	cmp -s "$TMP/$name.plain" "$TMP/$name.prof" ||
		fail "$name: output differs: $(diff "$TMP/$name.plain" "$TMP/$name.prof" | head -5)"
	check_profiles "$name" "$dir"
}

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
