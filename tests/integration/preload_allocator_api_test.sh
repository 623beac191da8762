#!/usr/bin/env bash
# preload_allocator_api_test.sh: programs linked against jemalloc and
# tcmalloc that call their allocator's own API directly (jemalloc's
# mallocx, rallocx, xallocx, sallocx, dallocx, sdallocx, nallocx;
# tcmalloc's tc_free, tc_free_sized, tc_delete, tc_malloc_size, tc_realloc,
# tc_malloc, tc_new...) on blocks from malloc and from that API run under
# the runtime exactly as they run alone (same output, exit 0), with default
# options and with range=1, and their profiles decode. The blocks are
# sampled at the default rate, so before the runtime wrapped these APIs the
# programs crashed on the first call given a range block.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

tested=0
for name in jemalloc_api tcmalloc_api; do
	prog=$AP_PROGDIR/$name
	st=0
	bounded 60 "$prog" >"$TMP/$name.plain" 2>&1 || st=$?
	if [ "$st" = 77 ]; then
		echo "$name: its allocator's headers or library are not installed" >&2
		continue
	fi
	[ "$st" = 0 ] || fail "$name fails even without the runtime ($st)"
	# default options (design 1: sampled blocks are the allocator's),
	# then range=1 (sampled blocks from allocprof's range, which these
	# APIs must never be handed)
	for opt in "" range=1; do
		tag=$name${opt:+.$opt}
		mkdir -p "$TMP/$tag"
		st=0
		bounded 60 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="seed=3,${opt:+$opt,}output=$TMP/$tag/p.%p.pb.gz" \
			"$prog" >"$TMP/$tag.prof" 2>&1 || st=$?
		[ "$st" = 0 ] || fail "$tag: exit status $st under the runtime: $(tail -3 "$TMP/$tag.prof")"
		cmp -s "$TMP/$name.plain" "$TMP/$tag.prof" ||
			fail "$tag: output differs: $(diff "$TMP/$name.plain" "$TMP/$tag.prof" | head -5)"
		check_profiles "$tag" "$TMP/$tag"
	done
	tested=$((tested + 1))
done
[ $tested -gt 0 ] || skip "neither jemalloc nor tcmalloc is installed"

# range=0 (every sample in the sampled set, blocks from jemalloc): blocks
# given back through sdallocx, dallocx and rallocx must leave the in-use
# view. The program holds nothing at exit; one sampled block leaked would
# be 4 MiB, so the in-use total must stay below that (what remains are
# libc's own live blocks, e.g. stdout's buffer, at weight about R each).
prog=$AP_PROGDIR/jemalloc_api
if [ -s "$TMP/jemalloc_api.plain" ]; then
	mkdir -p "$TMP/r0"
	st=0
	bounded 60 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="range=0,seed=3,output=$TMP/r0/p.%p.pb.gz" \
		"$prog" >"$TMP/r0.out" 2>&1 || st=$?
	[ "$st" = 0 ] || fail "range=0: exit status $st: $(tail -3 "$TMP/r0.out")"
	check_profiles jemalloc_api_range0 "$TMP/r0"
	inuse=$(bounded 60 "$CLI" folded "$TMP"/r0/p.*.pb.gz | awk '{ s += $NF } END { print s + 0 }')
	echo "range=0: $inuse bytes in use at exit" >&2
	[ "$inuse" -lt $((4 << 20)) ] || fail "range=0: $inuse bytes still in use at exit"
fi
echo "allocator api: ok ($tested)"
