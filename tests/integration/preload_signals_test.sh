#!/usr/bin/env bash
# preload_signals_test.sh: signal handlers that re-enter the allocator
# while their thread is inside the runtime (src/preload/README.md,
# "Guarantees"). progs/sig_reentry at rate=1, where nearly all of the
# program's time is spent in the runtime's sampling path:
#  - a 20 kHz timer's handler frees a sampled block, 2000 times: finishes
#    (it deadlocked on the stack-table lock before the fix);
#  - SIGINT's handler calls exit(3), 50 runs with SIGINT (from a POSIX
#    timer, 1-41 ms after the handler is installed): each exits 3 within
#    the time limit with a readable profile (the exit dump hung about 1 run
#    in 5);
#  - a 20 kHz timer's handler siglongjmps out, 300 times; afterwards every
#    malloc is still sampled (a guard left set stopped sampling for good,
#    or a lock left held hung the program).
# progs/sig_view, where the runtime wraps the program's handlers
# (src/preload/sigmask.c):
#  - sigaction and signal report the program's own actions back (handler,
#    flags, mask), and each handler kind runs with its own arguments;
#  - 2000 real-time signals queued to a thread that samples every malloc
#    arrive with their values, in order, once each (a held-back signal is
#    queued again with its siginfo);
#  - with a handler installed, 10000 sampled malloc+free pairs make fewer
#    than 1000 rt_sigprocmask calls (strace; about 40000 before: two per
#    sampled malloc, two per free of a sampled block).
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/sig_reentry
[ -x "$PROG" ] || fail "not built: $PROG"

for mode in "free 2000" "jump 300"; do
	# shellcheck disable=SC2086
	bounded 60 "$PROG" $mode >/dev/null || fail "sig_reentry $mode fails alone"
	for u in libunwind libgcc fp; do
		st=0
		# shellcheck disable=SC2086
		bounded 60 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=1,seed=1,unwinder=$u,dump_at_exit=0" \
			"$PROG" $mode >"$TMP/out" 2>"$TMP/err" || st=$?
		[ $st != 124 ] || fail "$mode ($u): hung"
		[ $st = 0 ] || fail "$mode ($u): exit status $st: $(head -3 "$TMP/err")"
	done
done

VIEW=$AP_PROGDIR/sig_view
[ -x "$VIEW" ] || fail "not built: $VIEW"
for u in libunwind libgcc fp; do
	for mode in view "queue 2000"; do
		st=0
		# shellcheck disable=SC2086
		bounded 60 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=1,seed=1,unwinder=$u,dump_at_exit=0" \
			"$VIEW" $mode >/dev/null 2>"$TMP/err" || st=$?
		[ $st = 0 ] || fail "sig_view $mode ($u): status $st: $(head -3 "$TMP/err")"
	done
done
command -v strace >/dev/null || fail "strace is missing (scripts/deps.sh)"
bounded 60 strace -f -qq -e trace=rt_sigprocmask -o "$TMP/strace" \
	env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,seed=1,dump_at_exit=0" \
	"$VIEW" count 10000 >/dev/null || fail "sig_view count fails under strace"
n=$(grep -c rt_sigprocmask "$TMP/strace" || true)
[ "$n" -lt 1000 ] || fail "10000 sampled pairs made $n rt_sigprocmask calls"

mkdir -p "$TMP/exit"
for i in $(seq 1 50); do
	st=0
	bounded 30 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=1,seed=$i,output=$TMP/exit/p.$i.pb.gz" \
		"$PROG" exit $((i % 9 * 5000 + 1000)) >/dev/null 2>"$TMP/err" || st=$?
	[ $st != 124 ] || fail "exit from SIGINT handler: run $i hung"
	[ $st = 3 ] || fail "exit from SIGINT handler: run $i exited $st: $(head -3 "$TMP/err")"
	[ -s "$TMP/exit/p.$i.pb.gz" ] || fail "exit from SIGINT handler: run $i wrote no profile"
done
check_readable "$TMP/exit/p.50.pb.gz"
echo "preload signals: ok"
