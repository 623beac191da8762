#!/usr/bin/env bash
# preload_triggers_test.sh: dumps other than the one at exit, seen from
# outside: on a signal (the program keeps running, and its own handling of
# other signals is unchanged), every N seconds (in a fork child too), every N
# bytes allocated, and none at all with dump_at_exit=0. Every profile written must decode.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

P=$AP_PROGDIR

# wait_files GLOB N SECONDS: until at least N files match; prints the count.
wait_files() {
	local n=0 i
	for ((i = 0; i < $3 * 10; i++)); do
		n=$(count_files "$1")
		[ "$n" -ge "$2" ] && break
		sleep 0.1
	done
	echo "$n"
}

# start_waiter NAME OPTIONS: exit_status wait under the runtime, in the
# background with SIGINT/SIGTERM at their defaults; sets $waiter.
start_waiter() {
	env --default-signal=INT,TERM LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="$2" \
		timeout --kill-after=5 120 "$P/exit_status" wait >"$TMP/$1.out" 2>"$TMP/$1.err" &
	waiter=$!
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q ready "$TMP/$1.out" 2>/dev/null && return
		sleep 0.1
	done
	fail "$1: the program never started"
}

# stop_waiter NAME: SIGTERM must kill it as it would without the runtime.
stop_waiter() {
	local st=0
	pkill -TERM -P "$waiter" exit_status || true
	wait "$waiter" || st=$?
	[ "$st" = 143 ] || fail "$1: program ended with status $st after SIGTERM, want 143"
	[ ! -s "$TMP/$1.err" ] || fail "$1: stderr: $(head -3 "$TMP/$1.err")"
}

# --- signal=SIGUSR2: each signal writes one more profile -----------------------
start_waiter sig "signal=SIGUSR2,output=$TMP/sig.%p.%n.pb.gz"
child=$(pgrep -P "$waiter" exit_status)
kill -USR2 "$child"
[ "$(wait_files "$TMP/sig.*.pb.gz" 1 10)" -ge 1 ] || fail "no profile after SIGUSR2"
kill -USR2 "$child"
[ "$(wait_files "$TMP/sig.*.pb.gz" 2 10)" -ge 2 ] || fail "no second profile after another SIGUSR2"
kill -0 "$child" || fail "the program died of SIGUSR2"
stop_waiter sig
for f in "$TMP"/sig.*.pb.gz; do check_readable "$f"; done

# --- interval=200ms: periodic dumps while the program sleeps -------------------
start_waiter tick "interval=200ms,output=$TMP/tick.%p.%n.pb.gz"
[ "$(wait_files "$TMP/tick.*.pb.gz" 3 10)" -ge 3 ] || fail "fewer than 3 dumps at interval=200ms in 10 s"
stop_waiter tick
for f in "$TMP"/tick.*.pb.gz; do check_readable "$f"; done

# --- interval= in a fork child: its own dumper thread, started by its samples --
# The child inherits the parent's answer to "is a dumper thread running?"
# and must ask again (dumper_atfork_child). With dump_at_exit=0 its _exit
# writes nothing, so every profile of its pid comes from its own thread's
# interval dumps.
mkdir "$TMP/fi"
env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,interval=100ms,dump_at_exit=0,output=$TMP/fi/p.%p.%n.pb.gz" \
	timeout 60 "$P/fork_interval" >"$TMP/fi.out" 2>"$TMP/fi.err" ||
	fail "fork_interval under interval=100ms failed: $(cat "$TMP/fi.err")"
child=$(cat "$TMP/fi.out")
n=$(count_files "$TMP/fi/p.$child.*.pb.gz")
[ "$n" -ge 3 ] || fail "interval=100ms: $n profiles from a fork child that ran 1 s (want >= 3)"
check_profiles fork_interval "$TMP/fi"

# --- every_bytes: the stress test allocates ~6 GB, so >= 4 dumps of 1 GiB ------
mkdir "$TMP/eb"
same_run every_bytes 120 LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="every_bytes=1g,output=$TMP/eb/p.%p.%n.pb.gz" -- "$P/stress_threads"
n=$(count_files "$TMP/eb/p.*.pb.gz")
[ "$n" -ge 5 ] || fail "every_bytes=1g: $n profiles for ~6 GB allocated (want >= 4 + exit)"
check_profiles every_bytes "$TMP/eb"

# --- dump_at_exit=0: nothing written ----------------------------------------------
mkdir "$TMP/none"
same_run no_exit_dump 60 LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="dump_at_exit=0,output=$TMP/none/p.%p.pb.gz" -- "$P/exit_status" exit 0
[ "$(count_files "$TMP/none/p.*.pb.gz")" = 0 ] || fail "dump_at_exit=0 still wrote a profile"
echo "triggers: ok"
