#!/usr/bin/env bash
# preload_jemalloc_api_test.sh: a program linked against jemalloc that
# calls mallocx, rallocx, xallocx, sallocx, dallocx, sdallocx and nallocx
# directly, on blocks from malloc and mallocx, runs under the runtime with
# default options exactly as it runs alone (same output, exit 0), and its
# profile decodes. The blocks are sampled at the default rate, so before
# the runtime wrapped jemalloc's API it crashed on the first sallocx.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

prog=$AP_PROGDIR/jemalloc_api
st=0
bounded 60 "$prog" >"$TMP/plain" 2>&1 || st=$?
[ "$st" = 77 ] && skip "jemalloc's headers or library are not installed"
[ "$st" = 0 ] || fail "jemalloc_api fails even without the runtime ($st)"
mkdir -p "$TMP/prof"
st=0
bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="seed=3,output=$TMP/prof/p.%p.pb.gz" \
	"$prog" >"$TMP/prof.out" 2>&1 || st=$?
[ "$st" = 0 ] || fail "exit status $st under the runtime: $(tail -3 "$TMP/prof.out")"
cmp -s "$TMP/plain" "$TMP/prof.out" ||
	fail "output differs: $(diff "$TMP/plain" "$TMP/prof.out" | head -5)"
check_profiles jemalloc_api "$TMP/prof"
echo "jemalloc api: ok"

# range=0 (every sample in the sampled set, blocks from jemalloc): blocks
# given back through sdallocx, dallocx and rallocx must leave the in-use
# view. The program holds nothing at exit; one sampled block leaked would
# be 4 MiB, so the in-use total must stay below that (what remains are
# libc's own live blocks, e.g. stdout's buffer, at weight about R each).
mkdir -p "$TMP/r0"
st=0
bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="range=0,seed=3,output=$TMP/r0/p.%p.pb.gz" \
	"$prog" >"$TMP/r0.out" 2>&1 || st=$?
[ "$st" = 0 ] || fail "range=0: exit status $st: $(tail -3 "$TMP/r0.out")"
check_profiles jemalloc_api_range0 "$TMP/r0"
inuse=$(bounded 60 "$CLI" folded "$TMP"/r0/p.*.pb.gz | awk '{ s += $NF } END { print s + 0 }')
echo "range=0: $inuse bytes in use at exit" >&2
[ "$inuse" -lt $((4 << 20)) ] || fail "range=0: $inuse bytes still in use at exit"
echo "jemalloc api, range=0: ok"
