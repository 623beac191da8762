#!/usr/bin/env bash
# preload_unwind_frames_test.sh: stacks through functions without frame
# pointers come out whole and right (progs/unwind_frames, -O2
# -fomit-frame-pointer, rate=1: every malloc sampled). The runtime walks
# such frames by rules it learned from libunwind's first step through
# them (src/preload/unwinder.c); vla_level's frame changes size from call
# to call, so a rule that fixed its size (as the first version did for a
# function whose push %rbp and mov %rsp,%rbp are apart) sends the walk
# into the wrong slots. Each of the 12 chains (depths 1-6, main thread and
# a second thread) must appear exactly, from its outermost frame (_start
# or the thread's clone) to leaf, and nothing else may end in leaf. Then
# the same through machine code generated at run time ("jit"), in a child
# forked by a thread ("fork"), and on a coroutine's stack ("coro").
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/unwind_frames
[ -x "$PROG" ] || fail "not built: $PROG"

# leaf_stacks NAME PROFILE...: the stacks ending in leaf, one a line, into
# $TMP/leaf; fails when there is none.
leaf_stacks() {
	local name=$1 f
	shift
	for f in "$@"; do
		"$CLI" folded --alloc "$f" || fail "$name: folded $f"
	done | grep -E '(^|;)leaf [0-9]+$' | sed 's/ [0-9]*$//' >"$TMP/leaf"
	[ -s "$TMP/leaf" ] || fail "$name: no stack ends in leaf"
}
# only_stacks NAME REGEX COUNT: every stack in $TMP/leaf matches REGEX, and
# COUNT of them are distinct.
only_stacks() {
	if grep -vE "$2" "$TMP/leaf" >"$TMP/bad"; then
		fail "$1: wrong stacks, e.g. $(head -2 "$TMP/bad")"
	fi
	local n
	n=$(sort -u "$TMP/leaf" | wc -l)
	[ "$n" = "$3" ] || fail "$1: $n distinct stacks end in leaf, not $3: $(sort -u "$TMP/leaf")"
}

for unw in libunwind; do
	bounded 120 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=1,unwinder=$unw,output=$TMP/$unw.pb.gz" \
		"$PROG" 3000 >"$TMP/out" 2>"$TMP/err" || fail "$unw: exit: $(head -3 "$TMP/err")"
	[ "$(cat "$TMP/out")" = "mallocs 6000" ] || fail "$unw: output $(cat "$TMP/out")"
	leaf_stacks "$unw" "$TMP/$unw.pb.gz"
	only_stacks "$unw" '^(_start;.*;main|(__)?clone3?;start_thread);run;(vla_level;fixed_level;){1,6}vla_level;leaf$' 12
	[ "$(grep -c '^_start' "$TMP/leaf")" = 6 ] || fail "$unw: not 6 chains from main"
done
# Code generated at run time (no symbol, no unwind information, a frame
# pointer) between the program and leaf: the stack goes on through it.
bounded 120 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,output=$TMP/jit.pb.gz" \
	"$PROG" 2000 jit >"$TMP/out" 2>"$TMP/err" || fail "jit: exit: $(head -3 "$TMP/err")"
[ "$(cat "$TMP/out")" = "mallocs 2000" ] || fail "jit: output $(cat "$TMP/out")"
"$CLI" folded --alloc "$TMP/jit.pb.gz" | grep -E '(^|;)leaf [0-9]+$' | sed 's/ [0-9]*$//' >"$TMP/leaf"
[ "$(sort -u "$TMP/leaf" | wc -l)" = 1 ] || fail "jit: not one stack ends in leaf: $(cat "$TMP/leaf")"
grep -qE '^_start;.*;main;run_jit;jit_level;0x[0-9a-f]+;leaf$' "$TMP/leaf" ||
	fail "jit: stack not whole through the generated code: $(cat "$TMP/leaf")"
# A child forked by a thread other than the main one: that thread is the
# child's main thread, on its own stack, not the parent's main stack. The
# runtime took the parent's main-thread bounds for it, found every sample
# off the stack and walked frame pointers these functions do not keep,
# which gave stacks of one frame and addresses read out of the data.
mkdir "$TMP/fork"
bounded 120 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,output=$TMP/fork/p.%p.pb.gz" \
	"$PROG" 1200 fork >"$TMP/out" 2>"$TMP/err" || fail "fork: exit: $(head -3 "$TMP/err")"
[ "$(cat "$TMP/out")" = "mallocs 1200" ] || fail "fork: output $(cat "$TMP/out")"
leaf_stacks fork "$TMP"/fork/p.*.pb.gz
only_stacks fork '^(__)?clone3?;start_thread;fork_thread_main;run;(vla_level;fixed_level;){1,6}vla_level;leaf$' 6
# On a coroutine's stack (extent unknown): the frame-pointer walk the
# runtime took there could not follow these functions, so their stacks
# ended at leaf or went on with stale addresses; libunwind, run from the
# saved registers on a stack of the runtime's, follows them whole.
bounded 120 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,output=$TMP/coro.pb.gz" \
	"$PROG" 1200 coro >"$TMP/out" 2>"$TMP/err" || fail "coro: exit: $(head -3 "$TMP/err")"
[ "$(cat "$TMP/out")" = "mallocs 1200" ] || fail "coro: output $(cat "$TMP/out")"
leaf_stacks coro "$TMP/coro.pb.gz"
only_stacks coro ';coro_entry;run;(vla_level;fixed_level;){1,6}vla_level;leaf$' 6
echo "preload unwind frames: ok"
