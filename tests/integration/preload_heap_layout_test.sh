#!/usr/bin/env bash
# preload_heap_layout_test.sh: sampling leaves the program's heap as it is.
# progs/heap_layout prints where glibc places a new thread's blocks
# (offsets from its first block); under the runtime the offsets must be
# those of the program alone at rate=1 (every block sampled, so the
# thread's first sample falls on its first block) with each unwinder, and
# at the default rate (where these few blocks are not sampled: the fast
# paths alone). Until 2026-11-28 a thread's first sample looked
# its stack up with pthread_getattr_np, whose CPU set glibc allocated and
# freed in the thread's arena, so the program's next blocks of that size
# moved: from then on glibc's heap took another course (over a long run,
# hundreds of extra page faults, a different number for every seed).
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/heap_layout
[ -x "$PROG" ] || fail "test program not built: $PROG"

"$PROG" >"$TMP/alone.out" || fail "heap_layout alone exited $?"
[ "$(wc -l <"$TMP/alone.out")" = 24 ] || fail "heap_layout printed $(wc -l <"$TMP/alone.out") lines, not 24"

for opts in rate=1 rate=1,unwinder=fp rate=1,unwinder=libgcc ""; do
	rm -f "$TMP"/p.*.pb.gz
	LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="output=$TMP/p.%p.pb.gz${opts:+,$opts}" \
		"$PROG" >"$TMP/prof.out" 2>"$TMP/prof.err" ||
		fail "heap_layout under the runtime ($opts) exited $?: $(head -3 "$TMP/prof.err")"
	[ ! -s "$TMP/prof.err" ] || fail "the runtime ($opts) wrote to stderr: $(head -3 "$TMP/prof.err")"
	diff "$TMP/alone.out" "$TMP/prof.out" >"$TMP/diff" ||
		fail "the thread's blocks moved under the runtime ($opts): $(head -6 "$TMP/diff" | tr '\n' ' ')"
	prof=$(ls "$TMP"/p.*.pb.gz 2>/dev/null | head -1)
	[ -n "$prof" ] || fail "no profile written ($opts)"
	case $opts in
	rate=1*)
		# Every block was recorded, so the first sample did happen on
		# the thread: the layout held with the stack look-up done.
		n=$("$CLI" report --alloc "$prof" | awk '$NF == "total" { print $(NF - 2) }')
		[ -n "$n" ] && [ "$n" -ge 24 ] ||
			fail "expected at least the thread's 24 blocks sampled ($opts), got '${n:-nothing}'"
		# ...and with its whole stack: the look-up found the bounds.
		"$CLI" report --alloc --by stack "$prof" | grep -q "worker <- start_thread" ||
			fail "the thread's stacks are cut short ($opts): $("$CLI" report --alloc --by stack "$prof" | head -4 | tr '\n' ' ')"
		;;
	esac
done
echo "PASS: a thread's heap layout is unchanged by sampling"
