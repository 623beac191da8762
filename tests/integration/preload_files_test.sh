#!/usr/bin/env bash
# preload_files_test.sh: the runtime's files under stress.
# - kill -9 during frequent dumps leaves no temporary file (unnamed
#   O_TMPFILE writes; stale temporaries of dead writers are removed by the
#   next run's first dump, in the process the runtime started in: not
#   again by each of its fork children).
# - A shell loop of runs with one fixed name keeps one file; a run that ends
#   while another runs keeps its file beside the other's.
# - Writes that keep failing print a handful of lines, not one per dump.
# - interval= below 1ms, or a value that rounds to nothing, is refused
#   with one line instead of spinning or silently meaning never.
# Every run is bounded. AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"
P=$AP_PROGDIR/proc_events

# run_daemon NAME OPTIONS: proc_events daemon under the runtime, in the
# background; waits for "ready"; sets $pid (the program itself).
run_daemon() {
	rm -f "$TMP/$1.out"
	timeout --kill-after=5 60 env --default-signal=TERM LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="$2" "$P" daemon >"$TMP/$1.out" 2>"$TMP/$1.err" &
	local w=$!
	wait_ready "$TMP/$1.out" || fail "$1: never ready: $(cat "$TMP/$1.err")"
	pid=$(pgrep -P "$w" proc_events) || fail "$1: did not start: $(cat "$TMP/$1.err")"
}

# cpu_ticks PID: user + system clock ticks the process has used.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# --- no litter from kill -9 --------------------------------------------------
mkdir "$TMP/k"
for pattern in 'p.%p.%n.pb.gz' f.pb.gz; do
	for i in $(seq 12); do
		run_daemon kill "rate=1,interval=1ms,output=$TMP/k/$pattern"
		sleep "0.$((RANDOM % 3 + 1))"
		kill -9 "$pid"
		wait 2>/dev/null || true
	done
done
# One more run with each pattern cleans what a kill between link and
# rename could have left.
for pattern in 'p.%p.%n.pb.gz' f.pb.gz; do
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="output=$TMP/k/$pattern" "$P" exit >/dev/null
done
litter=$(find "$TMP/k" -name '*.tmp.*' | wc -l)
[ "$litter" = 0 ] || fail "$litter temporary file(s) left by kill -9: $(ls "$TMP/k" | grep tmp | head -3)"

# --- litter is cleaned once per run, not by every fork child -------------------
# A pre-fork server's children each dump at exit; a directory scan in each
# would cost O(profiles) per child. The process the runtime started in
# cleans (at its first dump); its fork child leaves the scan to it. The
# writer's pid is beyond any pid_max: never alive.
mkdir "$TMP/c"
stale="$TMP/c/p.1.pb.gz.tmp.2147483646.1"
: >"$stale"
rm -f "$TMP/c.stop"
timeout --kill-after=5 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="output=$TMP/c/p.%p.pb.gz" \
	"$P" fork "$TMP/c.stop" >"$TMP/c.out" 2>"$TMP/c.err" &
w=$!
wait_ready "$TMP/c.out" || fail "fork: never ready: $(cat "$TMP/c.err")"
n=$(find "$TMP/c" -name 'p.*.pb.gz' | wc -l)
[ "$n" = 1 ] || fail "fork: want the child's profile alone before the parent exits: $(ls "$TMP/c")"
[ -e "$stale" ] || fail "fork: the child scanned the directory for litter"
touch "$TMP/c.stop"
wait "$w" || fail "fork: program failed: $(cat "$TMP/c.err")"
[ ! -e "$stale" ] || fail "fork: the parent's dump left a dead writer's temporary file"

# --- one fixed name: a shell loop keeps one file, concurrent runs keep two ------
# A name without %p is one file: each run of a loop replaces the previous
# run's, as its plain output would be. The rule that keeps two concurrent
# processes from replacing each other's file compares the file's stamp
# with the runtime's start; a stamp in the very kernel tick the runtime
# started in is ambiguous, and the file's writer (an extended attribute the
# runtime sets) decides: gone, it was the loop's previous command. Before,
# the tie always counted as another's and about one run in four of such a
# loop got its pid inserted (3 to 5 files from 20 runs of true(1) here).
mkdir "$TMP/loop"
# true(1): the shorter a run, the likelier the next starts in the tick the
# previous one wrote in.
for i in $(seq 30); do
	bounded 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,output=$TMP/loop/heap.pb.gz" \
		true || fail "loop: run $i failed"
done
: >"$TMP/xattr-probe"
if python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.probe", b"1")' \
	"$TMP/xattr-probe" 2>/dev/null; then
	[ "$(ls "$TMP/loop")" = heap.pb.gz ] ||
		fail "loop: 30 runs with one fixed name left: $(ls "$TMP/loop" | tr '\n' ' ')"
else
	echo "note: $TMP has no user extended attributes; the loop's file count is not checked"
fi
# A run that ends while another is running: the later one keeps its own.
run_daemon long "rate=1,output=$TMP/loop/both.pb.gz"
long=$pid
bounded 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,output=$TMP/loop/both.pb.gz" \
	"$P" exit >/dev/null || fail "concurrent: the short run failed"
kill -TERM "$long"
for i in $(seq 100); do
	kill -0 "$long" 2>/dev/null || break
	sleep 0.1
done
[ -s "$TMP/loop/both.pb.gz" ] && [ -s "$TMP/loop/both.$long.pb.gz" ] ||
	fail "concurrent: want both.pb.gz and both.$long.pb.gz: $(ls "$TMP/loop" | tr '\n' ' ')"

# --- failing writes: a few lines, not one per dump -----------------------------
run_daemon full "interval=1ms,output=/nonexistent-dir/x.%n.pb.gz"
sleep 1
kill -TERM "$pid"
wait 2>/dev/null || true
n=$(grep -c 'cannot write profile' "$TMP/full.err" || true)
# About 1000 failed dumps: the first, the 10th, the 100th, (the 1000th).
[ "$n" -ge 1 ] && [ "$n" -le 4 ] || fail "$n lines for failing dumps: $(head -5 "$TMP/full.err")"

# --- interval limits ----------------------------------------------------------
for bad in 1ns 999us 0.0000000001s; do
	bounded 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="interval=$bad,dump_at_exit=0" \
		"$P" exit >/dev/null 2>"$TMP/iv.err"
	[ "$(wc -l <"$TMP/iv.err")" = 1 ] && grep -q "key 'interval'.*at least 1ms" "$TMP/iv.err" ||
		fail "interval=$bad not refused: $(cat "$TMP/iv.err")"
done
bounded 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="interval=1ms,dump_at_exit=0,output=$TMP/iv.%n.pb.gz" \
	"$P" exit >/dev/null 2>"$TMP/iv.err"
[ ! -s "$TMP/iv.err" ] || fail "interval=1ms refused: $(cat "$TMP/iv.err")"
# A refused interval costs nothing: the process idles.
run_daemon spin "interval=1ns,output=$TMP/spin.%n.pb.gz"
t0=$(cpu_ticks "$pid")
sleep 1
t1=$(cpu_ticks "$pid")
kill -TERM "$pid"
wait 2>/dev/null || true
[ $((t1 - t0)) -le 20 ] || fail "interval=1ns: $((t1 - t0)) ticks of CPU in 1 s of idling"
echo "files: ok"
