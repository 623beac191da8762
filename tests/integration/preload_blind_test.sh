#!/usr/bin/env bash
# preload_blind_test.sh: when the runtime cannot see the program's
# allocations it says so, in one line on stderr and as an
# "allocprof.warning=" comment in the profile, instead of writing an empty
# profile silently: another allocator before it in LD_PRELOAD (jemalloc),
# an allocator linked into the program, or one the program keeps to itself
# (mmap). A normal run and the right preload order print nothing.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

# blind NAME PRELOAD EXPECT PROG ARGS...: the run prints EXPECT (a grep
# pattern) in exactly one line and its profile carries the warning.
blind() {
	local name=$1 preload=$2 expect=$3
	shift 3
	bounded 60 env LD_PRELOAD="$preload" ALLOCPROF_OPTIONS="output=$TMP/$name.pb.gz,seed=1" \
		"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || fail "$name: the program failed"
	[ "$(wc -l <"$TMP/$name.err")" = 1 ] && grep -q "^allocprof: .*$expect" "$TMP/$name.err" ||
		fail "$name: want one line matching '$expect': $(cat "$TMP/$name.err")"
	check_readable "$TMP/$name.pb.gz"
	gzip -dc "$TMP/$name.pb.gz" | grep -aq "allocprof\.warning=.*$expect" ||
		fail "$name: the profile has no warning comment"
}

# seeing NAME PRELOAD PROG ARGS...: no warning anywhere.
seeing() {
	local name=$1 preload=$2
	shift 2
	bounded 60 env LD_PRELOAD="$preload" ALLOCPROF_OPTIONS="output=$TMP/$name.pb.gz,seed=1" \
		"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || fail "$name: the program failed"
	[ ! -s "$TMP/$name.err" ] || fail "$name: stderr: $(cat "$TMP/$name.err")"
	! gzip -dc "$TMP/$name.pb.gz" | grep -aq 'allocprof\.warning=' ||
		fail "$name: a warning in a profile that sees allocations"
}

blind linked "$LIB" "no allocation reached allocprof" "$AP_PROGDIR/own_malloc"
blind private "$LIB" "no allocation reached allocprof" "$AP_PROGDIR/own_malloc" private
seeing plain "$LIB" "$AP_PROGDIR/proc_events" exit

# The same allocator exported by the executable (as rustc's statically
# linked jemalloc is): the program's malloc is the executable's by name. An
# allocator preloaded after the runtime must still work: tcmalloc's start-up
# calls its own tc_malloc, which the runtime wraps, and the wrapper once
# passed the request to the executable's malloc by that name, leaving
# tcmalloc uninitialised for the operator new that followed (a crash).
if [ -x "$AP_PROGDIR/own_malloc_exported" ]; then
	blind exported "$LIB" "own_malloc_exported's, not allocprof's (an allocator linked" \
		"$AP_PROGDIR/own_malloc_exported"
	for under in libtcmalloc_minimal.so.4 libtcmalloc.so.4 libjemalloc.so.2 libmimalloc.so.2; do
		lib=$(lib_path "$under")
		[ -n "$lib" ] || continue
		blind "exported_${under%%.so*}" "$LIB $lib" "own_malloc_exported's, not allocprof's" \
			"$AP_PROGDIR/own_malloc_exported"
		grep -qx ok "$TMP/exported_${under%%.so*}.out" || fail "exported over $under: no 'ok'"
	done
fi

# The C++ case: libstdc++'s operator new reaches the executable's malloc,
# and the program gives its blocks back with free(), which aborts on a
# block that is not its own. The runtime's operator new must pass every
# request on as it is (once it took them to the allocator underneath), and
# sample none (rate=1 samples every block elsewhere).
for opts in "" "rate=1,"; do
	name=cxx_${opts%%=*}
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="${opts}output=$TMP/$name.pb.gz" \
		"$AP_PROGDIR/own_malloc_cxx" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		fail "own_malloc_cxx ($opts): the program failed: $(cat "$TMP/$name.err")"
	grep -qx "own malloc served 1000 of 1000" "$TMP/$name.out" ||
		fail "own_malloc_cxx ($opts): $(head -1 "$TMP/$name.out")"
	grep -q "own_malloc_cxx's, not allocprof's" "$TMP/$name.err" ||
		fail "own_malloc_cxx ($opts): no warning: $(cat "$TMP/$name.err")"
done

jem=$(lib_path libjemalloc.so.2)
if [ -n "$jem" ]; then
	blind order "$jem $LIB" "libjemalloc.so.2's, not allocprof's (put allocprof first" \
		"$AP_PROGDIR/proc_events" exit
	seeing right_order "$LIB $jem" "$AP_PROGDIR/proc_events" exit
else
	echo "jemalloc (libjemalloc2) not installed: preload order not checked" >&2
fi
echo "blind: ok"
