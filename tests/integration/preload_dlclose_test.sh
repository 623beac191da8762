#!/usr/bin/env bash
# preload_dlclose_test.sh: samples taken inside a library the program later
# dlcloses keep their library: the profile written after the unload still
# has a mapping for libbz2 (path and build ID), so the report symbolises
# those frames (BZ2_bzCompressInit) instead of showing raw addresses.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

st=0
bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,seed=1,output=$TMP/d.pb.gz" \
	"$AP_PROGDIR/dlclose_alloc" >"$TMP/out" 2>"$TMP/err" || st=$?
[ "$st" != 77 ] || skip "libbz2.so.1.0 is not installed"
[ "$st" = 0 ] || fail "dlclose_alloc exited $st: $(cat "$TMP/err")"
check_readable "$TMP/d.pb.gz"
# The 3.6 MB of stream state is sampled at rate=4096 (missed with
# probability e^-900): its frames must name the unloaded library.
"$CLI" report "$TMP/d.pb.gz" >"$TMP/rep" 2>&1 || fail "report: $(cat "$TMP/rep")"
grep -q 'BZ2_bzCompressInit' "$TMP/rep" ||
	fail "frames in the unloaded libbz2 are not symbolised: $(head -8 "$TMP/rep")"
echo "dlclose: ok"
