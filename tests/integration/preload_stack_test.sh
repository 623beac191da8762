#!/usr/bin/env bash
# preload_stack_test.sh: the runtime's sampling path fits small stacks
# (src/preload/README.md, "Guarantees"). With progs/small_stack at rate=1
# (every allocation a sample), for each unwinder:
#  - mallocs in a signal handler on an 8 KiB alternate signal stack, and in
#    ucontext coroutines with 4, 6 and 8 KiB stacks (guard page below), run
#    as they do alone;
#  - the stack the runtime adds, measured on painted stacks (deepest byte
#    touched, warm allocator, runtime minus alone): on a coroutine's stack
#    (unknown extent: the checked frame-pointer walk) at most 1 KiB (0.4 KiB
#    measured); on the thread's own stack (full unwind) at most 6 KiB
#    (libunwind 5.2 KiB measured, libgcc 1.8, fp 0.4), below the 12 KiB
#    UNWIND_STACK_NEED the runtime requires before a full unwind.
# Before the fix a sample took 6.5 KiB more: all of these crashed.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/small_stack
[ -x "$PROG" ] || fail "not built: $PROG"

# run NAME OPTIONS ARGS...: same output as alone ("ok"), exit 0.
run() {
	local name=$1 opts=$2 st=0
	shift 2
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="$opts,dump_at_exit=0" \
		"$PROG" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || st=$?
	[ $st = 0 ] || fail "$name ($*): exit status $st: $(head -3 "$TMP/$name.err")"
	grep -qx ok "$TMP/$name.out" || fail "$name: output $(head -3 "$TMP/$name.out")"
}

# used MODE [OPTIONS]: stack bytes the program touched.
used() {
	local out
	if [ $# = 1 ]; then
		out=$(bounded 60 "$PROG" "$1" 50)
	else
		out=$(bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="$2,dump_at_exit=0" \
			"$PROG" "$1" 50)
	fi
	echo "$out" | awk '$1 == "stack" { print $2 }'
}

for m in "altstack 200" "coro 4096 200" "coro 6144 200" "coro 8192 200"; do
	# shellcheck disable=SC2086
	bounded 60 "$PROG" $m >/dev/null || fail "small_stack $m fails alone"
done
coro_alone=$(used measure)
main_alone=$(used measure-main)
for u in libunwind libgcc fp; do
	opts="rate=1,seed=1,unwinder=$u"
	run "alt_$u" "$opts" altstack 200
	for k in 4096 6144 8192; do
		run "coro${k}_$u" "$opts" coro $k 200
	done
	coro=$(($(used measure "$opts") - coro_alone))
	main=$(($(used measure-main "$opts") - main_alone))
	echo "unwinder $u: the runtime adds $coro bytes on a coroutine stack, $main on the thread's" >&2
	[ "$coro" -le 1024 ] || fail "$u: $coro bytes more stack on a coroutine (bound 1024)"
	[ "$main" -le 6144 ] || fail "$u: $main bytes more stack on the thread's stack (bound 6144)"
done
echo "preload stack: ok"
