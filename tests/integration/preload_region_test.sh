#!/usr/bin/env bash
# preload_region_test.sh: design (2) of the free() fast path end to end.
# At a rate of 16 KiB or more the runtime serves sampled blocks from its own
# address range (src/preload/region.h); progs/region_allocs drives every
# malloc-family entry point with 1 MiB blocks (sampled with probability
# 1 - e^-64 at rate 16384), across 4 threads and a fork, and counts the
# blocks bearing the range's signature (page-aligned, usable size a whole
# number of pages) among those of entry points for which glibc never
# returns that (malloc, calloc, realloc, alignments below the page; not
# valloc, pvalloc or page alignments, whose blocks glibc mmaps with exactly
# that signature whenever its dynamic mmap threshold is below their size).
#  - glibc alone: 0 such blocks, no errors; also with
#    MALLOC_MMAP_THRESHOLD_=131072, which makes glibc mmap every block of
#    128 KiB or more, so its mmapped blocks are all checked, every run;
#  - runtime at rate=16384 with range=1,range_max=0 (every size from the range):
#    every such block has it (the odds of one 1 MiB block escaping
#    sampling are below 1e-13), no errors, a readable profile;
#  - runtime at rate=16384, range=1, the default range_max (64 KiB): none has
#    it (1 MiB blocks stay with the allocator), no errors;
#  - runtime at rate=1 (below the range's threshold: design 1 serves
#    samples from glibc): 0 such blocks, no errors;
#  - runtime at rate=16384 with range=0 (design 2 off): 0 such blocks,
#    with glibc's dynamic threshold and with every large block mmapped;
#  - runtime at rate=16384 with no range option: 0 such blocks (range=0
#    is the default: docs/DESIGN.md, "The fast path stays tiny");
#  - runtime on jemalloc, tcmalloc, mimalloc (if installed) at 16384 with
#    range=1: no errors (their large blocks can look paged, so only
#    errors are checked).
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/region_allocs
[ -x "$PROG" ] || fail "not built: $PROG"

# run NAME PRELOAD OPTIONS [VAR=VALUE...]: run the program (with the extra
# environment); leaves "blocks signed paged errors" in $TMP/NAME.counts and
# fails on a nonzero exit.
run() {
	local name=$1 pre=$2 opts=$3 st=0
	shift 3
	mkdir -p "$TMP/$name"
	bounded 120 env "$@" LD_PRELOAD="$pre" ALLOCPROF_OPTIONS="$opts,output=$TMP/$name/p.%p.pb.gz" \
		"$PROG" >"$TMP/$name.out" 2>"$TMP/$name.err" || st=$?
	[ $st = 0 ] || fail "$name: exit status $st: $(head -5 "$TMP/$name.err")"
	[ ! -s "$TMP/$name.err" ] || fail "$name: stderr: $(head -5 "$TMP/$name.err")"
	awk '$1 == "blocks" && $3 == "signed" && $5 == "paged" && $7 == "errors" { print $2, $4, $6, $8 }' \
		"$TMP/$name.out" >"$TMP/$name.counts"
	[ -s "$TMP/$name.counts" ] || fail "$name: no summary line: $(cat "$TMP/$name.out")"
}

run plain "" "seed=1"
read -r blocks signed paged errors <"$TMP/plain.counts"
[ "$blocks" -gt 500 ] || fail "plain: only $blocks blocks checked"
[ "$signed" -gt 300 ] || fail "plain: only $signed blocks with a distinctive signature"
[ "$paged" = 0 ] || fail "plain: glibc returned $paged page-rounded blocks; the signature is not distinctive"

# glibc mmapping every large block: the blocks whose signature depends on
# its threshold are always mmapped here, so a signed one would show.
MMAP_ALL=MALLOC_MMAP_THRESHOLD_=131072
run plain_mmap "" "seed=1" "$MMAP_ALL"
read -r b0 s0 p0 e0 <"$TMP/plain_mmap.counts"
[ "$s0" = "$signed" ] || fail "plain_mmap: $s0 signed blocks, $signed with glibc's own threshold"
[ "$p0" = 0 ] || fail "plain_mmap: glibc returned $p0 page-rounded blocks; the signature is not distinctive"

run region "$LIB" "seed=3,rate=16384,range=1,range_max=0"
read -r b2 s2 p2 e2 <"$TMP/region.counts"
[ "$b2" = "$blocks" ] || fail "region: $b2 blocks checked, $blocks without the runtime"
[ "$s2" = "$signed" ] || fail "region: $s2 signed blocks, $signed without the runtime"
[ "$p2" = "$s2" ] || fail "region: only $p2 of $s2 blocks came from the range"
check_profiles region "$TMP/region"

run region_max "$LIB" "seed=3,rate=16384,range=1"
read -r b6 s6 p6 e6 <"$TMP/region_max.counts"
[ "$s6" = "$signed" ] || fail "region_max: $s6 signed blocks, $signed without the runtime"
[ "$p6" = 0 ] || fail "region_max: $p6 blocks of 1 MiB came from the range above range_max"
check_profiles region_max "$TMP/region_max"

run rate1 "$LIB" "seed=3,rate=1"
read -r b3 s3 p3 e3 <"$TMP/rate1.counts"
[ "$s3" = "$signed" ] || fail "rate1: $s3 signed blocks, $signed without the runtime"
[ "$p3" = 0 ] || fail "rate1: $p3 blocks came from the range below its threshold rate"
check_profiles rate1 "$TMP/rate1"

run range0 "$LIB" "seed=3,rate=16384,range=0"
read -r b4 s4 p4 e4 <"$TMP/range0.counts"
[ "$s4" = "$signed" ] || fail "range0: $s4 signed blocks, $signed without the runtime"
[ "$p4" = 0 ] || fail "range0: $p4 blocks came from the range with range=0"
check_profiles range0 "$TMP/range0"

run range0_mmap "$LIB" "seed=3,rate=16384,range=0" "$MMAP_ALL"
read -r b5 s5 p5 e5 <"$TMP/range0_mmap.counts"
[ "$s5" = "$signed" ] || fail "range0_mmap: $s5 signed blocks, $signed without the runtime"
[ "$p5" = 0 ] || fail "range0_mmap: $p5 page-rounded blocks with range=0"
check_profiles range0_mmap "$TMP/range0_mmap"

# The default is design 1: with no range option, no block from the range.
run default "$LIB" "seed=3,rate=16384"
read -r b7 s7 p7 e7 <"$TMP/default.counts"
[ "$s7" = "$signed" ] || fail "default: $s7 signed blocks, $signed without the runtime"
[ "$p7" = 0 ] || fail "default: $p7 blocks came from the range without range=1"
check_profiles default "$TMP/default"

for soname in libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2; do
	alloc=$(lib_path "$soname")
	[ -n "$alloc" ] || continue
	tag=${soname%%.so*}
	for max in 0 65536; do
		run "$tag.$max" "$LIB $alloc" "seed=5,rate=16384,range=1,range_max=$max"
		check_profiles "$tag.$max" "$TMP/$tag.$max"
	done
done
echo "region: ok (blocks $b2, signed $s2, from the range $p2; errors $errors/$e2/$e3)"
