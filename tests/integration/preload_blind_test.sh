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

jem=$(lib_path libjemalloc.so.2)
if [ -n "$jem" ]; then
	blind order "$jem $LIB" "libjemalloc.so.2's, not allocprof's (put allocprof first" \
		"$AP_PROGDIR/proc_events" exit
	seeing right_order "$LIB $jem" "$AP_PROGDIR/proc_events" exit
else
	echo "jemalloc (libjemalloc2) not installed: preload order not checked" >&2
fi
echo "blind: ok"
