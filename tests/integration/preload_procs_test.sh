#!/usr/bin/env bash
# preload_procs_test.sh: profiles across signals and processes.
# - A daemon stopped by SIGTERM, SIGINT or SIGHUP (left at their default
#   action) leaves a profile with its samples and still dies of the signal
#   (status 128+N); dump_on=segv does the same for a SIGSEGV.
# - A program with its own SIGTERM handler sees the default action when it
#   asks, and keeps its behaviour (its handler runs, exit status 7); the
#   handler's _exit writes the profile at exit, from inside the handler.
#   A crash reporter's _exit (in a SIGSEGV handler) writes none unless
#   dump_on= names the signal; a program that blocks every signal, with no
#   handler for the faults among them, writes one at its _exit.
# - One output name, several processes: under `timeout` both processes load
#   the runtime; the program's profile keeps the name and the wrapper's goes
#   to a name with its pid. A raw clone(SIGCHLD) child writes under its own
#   pid; a vfork child calling exit() or _exit() writes nothing and leaves
#   the parent's HTTP endpoint serving; a fork child leaving through _exit
#   writes its own profile, as one calling exit() does.
# - A fork child that switches to another user and cannot write into the
#   output directory says why; with the directory writable it writes.
# Every wait is bounded. AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"
P=$AP_PROGDIR/proc_events

# has_marker FILE: the profile has the program's own 1 MiB block (at
# rate=4096 it is missed with probability e^-256).
has_marker() {
	check_readable "$1"
	"$CLI" report "$1" >"$TMP/rep" 2>&1 || fail "$1: report failed: $(cat "$TMP/rep")"
	grep -q keep_marker_block "$TMP/rep"
}

# start NAME OPTIONS MODE: proc_events MODE under the runtime in the
# background (INT and TERM at their defaults), waits for "ready"; sets $pid.
start() {
	timeout --kill-after=5 60 env --default-signal=INT,TERM,HUP LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=4096,$2" "$P" "$3" >"$TMP/$1.out" 2>"$TMP/$1.err" &
	pid=$!
	wait_ready "$TMP/$1.out" || fail "$1: the program never got ready: $(cat "$TMP/$1.err")"
}

# signal_and_wait NAME SIG: send SIG to the program (timeout's child); sets
# st to the status timeout passes on (it re-raises a child's signal death).
signal_and_wait() {
	local child
	child=$(pgrep -P "$pid" proc_events) || fail "$1: no program under timeout"
	kill -"$2" "$child"
	st=0
	wait "$pid" || st=$?
}

# --- terminating signals at their default action ---------------------------
for sig in TERM:143 INT:130 HUP:129; do
	name=${sig%%:*}
	start "$name" "output=$TMP/$name.pb.gz" daemon
	signal_and_wait "$name" "$name"
	[ "$st" = "${sig##*:}" ] || fail "SIG$name: status $st, want ${sig##*:}"
	[ -e "$TMP/$name.pb.gz" ] || fail "SIG$name: no profile"
	has_marker "$TMP/$name.pb.gz" || fail "SIG$name: the profile lacks the program's samples"
	[ ! -s "$TMP/$name.err" ] || fail "SIG$name: stderr: $(cat "$TMP/$name.err")"
done

# dump_on=none: no profile, same status.
start none "output=$TMP/none.pb.gz,dump_on=none" daemon
signal_and_wait none TERM
[ "$st" = 143 ] || fail "dump_on=none: status $st"
[ ! -e "$TMP/none.pb.gz" ] || fail "dump_on=none: a profile was written"

# dump_on=segv: a raised SIGSEGV (default action restored by the program).
st=0
timeout --kill-after=5 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="output=$TMP/segv.pb.gz,dump_on=segv" \
	"$AP_PROGDIR/exit_status" signal 11 2>"$TMP/segv.err" || st=$?
[ "$st" = 139 ] || fail "SIGSEGV: status $st, want 139"
check_readable "$TMP/segv.pb.gz"

# --- the program's own handler wins ---------------------------------------------
timeout 60 "$P" own >"$TMP/own.plain" &
pid=$!
wait_ready "$TMP/own.plain" || fail "own handler, plain run: never ready"
signal_and_wait own TERM
[ "$st" = 7 ] || fail "own handler, plain run: status $st"
start own "output=$TMP/own.pb.gz" own
signal_and_wait own TERM
[ "$st" = 7 ] || fail "own handler: status $st, want 7 (its handler's exit)"
cmp -s "$TMP/own.plain" "$TMP/own.out" ||
	fail "own handler: output differs: $(diff "$TMP/own.plain" "$TMP/own.out")"
# Status 7 shows the program's handler ran, not the runtime's dump and
# re-raise (143). That handler leaves through _exit: the exit's profile.
has_marker "$TMP/own.pb.gz" || fail "own handler: no profile at its _exit"

# --- a crash reporter's _exit ---------------------------------------------------
# run_exit NAME MODE STATUS LINE [OPTS]: proc_events MODE, which prints LINE
# and leaves through _exit(STATUS), at rate 4096 with output $TMP/NAME.pb.gz
# and OPTS; fails unless both happened. The caller checks the profile.
run_exit() {
	local name=$1 mode=$2 want=$3 line=$4 opt=${5:-}
	rm -f "$TMP/$name.pb.gz"
	st=0
	timeout --kill-after=5 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,output=$TMP/$name.pb.gz$opt" \
		"$P" "$mode" >"$TMP/$name.out" 2>"$TMP/$name.err" || st=$?
	[ "$st" = "$want" ] || fail "$mode ($opt): status $st, want $want: $(cat "$TMP/$name.err")"
	grep -qx "$line" "$TMP/$name.out" || fail "$mode ($opt): \"$line\" not printed"
}

# A SIGSEGV handler that leaves through _exit: no profile by default (the
# heap may be what broke, and the process must still end), one when
# dump_on= names the signal. Its status is its own either way.
run_exit crash crash 3 "crash handler"
[ ! -e "$TMP/crash.pb.gz" ] || fail "crash handler: a profile without dump_on=segv"
run_exit crash crash 3 "crash handler" ",dump_on=segv"
has_marker "$TMP/crash.pb.gz" || fail "crash handler: no profile with dump_on=segv"
# The same handler leaving through exit(): destructors run, and the
# runtime's must apply the same rule.
run_exit crash_exit crash_exit 3 "crash handler"
[ ! -e "$TMP/crash_exit.pb.gz" ] || fail "crash handler's exit(): a profile without dump_on=segv"
run_exit crash_exit crash_exit 3 "crash handler" ",dump_on=segv"
has_marker "$TMP/crash_exit.pb.gz" || fail "crash handler's exit(): no profile with dump_on=segv"

# Every signal blocked is a mask the program chose (a daemon waiting with
# sigwait or a signalfd), not a handler: with no handler for the blocked
# faults, its _exit is an ordinary end and writes the profile.
run_exit masked masked_exit 5 "masked exit"
has_marker "$TMP/masked.pb.gz" || fail "every signal blocked: no profile at its _exit"
# Such a daemon usually has a crash handler installed too: every signal
# blocked is still its own mask, not a handler's (a handler blocks its fault
# and its sa_mask), at _exit and at exit().
run_exit masked_crash masked_crash 5 "masked exit"
has_marker "$TMP/masked_crash.pb.gz" || fail "every signal blocked, crash handler: no profile at _exit"
run_exit masked_crash_exit masked_crash_exit 5 "masked exit"
has_marker "$TMP/masked_crash_exit.pb.gz" || fail "every signal blocked, crash handler: no profile at exit()"

# --- one output name, several processes --------------------------------------
mkdir "$TMP/wrap"
bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,output=$TMP/wrap/w.pb.gz" \
	timeout 30 "$P" exit >"$TMP/wrap.out" || fail "timeout wrapper: failed"
has_marker "$TMP/wrap/w.pb.gz" || fail "timeout wrapper: w.pb.gz is not the program's profile"
[ "$(count_files "$TMP/wrap/w.*.pb.gz")" = 1 ] ||
	fail "timeout wrapper: want w.pb.gz and one w.PID.pb.gz: $(ls "$TMP/wrap")"

mkdir "$TMP/clone"
bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,output=$TMP/clone/c.%p.pb.gz" \
	"$P" clone >"$TMP/clone.out" || fail "clone: failed"
child=$(awk '$1 == "child" { print $2 }' "$TMP/clone.out")
[ -n "$child" ] || fail "clone: no child pid"
[ -e "$TMP/clone/c.$child.pb.gz" ] || fail "clone: no profile under the child's pid: $(ls "$TMP/clone")"
[ "$(count_files "$TMP/clone/c.*.pb.gz")" = 2 ] || fail "clone: want 2 profiles: $(ls "$TMP/clone")"
has_marker "$TMP/clone/c.$child.pb.gz" || fail "clone: the child's profile lacks its samples"

if command -v curl >/dev/null; then
	for mode in vfork vfork_exit; do
		d=$TMP/$mode
		mkdir "$d"
		timeout --kill-after=5 60 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=4096,output=$d/v.%p.%n.pb.gz,http=0,http_portfile=$d.port" \
			"$P" $mode "$d.stop" >"$d.out" 2>"$d.err" &
		pid=$!
		wait_ready "$d.out" || fail "$mode: never ready"
		code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "http://$(cat "$d.port")/metrics" || true)
		touch "$d.stop"
		wait "$pid" || fail "$mode: program failed"
		[ "$code" = 200 ] || fail "$mode: the parent's endpoint answers '$code' after the child's exit"
		[ "$(count_files "$d/v.*.pb.gz")" = 1 ] ||
			fail "$mode: want only the parent's profile: $(ls "$d")"
		has_marker "$d"/v.*.0.pb.gz || fail "$mode: the profile lacks the parent's samples"
	done
fi
# A pre-fork worker that leaves through _exit (no destructors run) still
# writes its own profile, under its pid, with its own samples.
mkdir "$TMP/fx"
timeout --kill-after=5 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,output=$TMP/fx/f.%p.pb.gz" \
	"$P" fork_exit "$TMP/fx.stop" >"$TMP/fx.out" 2>"$TMP/fx.err" &
pid=$!
wait_ready "$TMP/fx.out" || fail "fork_exit: never ready"
touch "$TMP/fx.stop"
wait "$pid" || fail "fork_exit: program failed: $(cat "$TMP/fx.err")"
child=$(awk '$1 == "child" { print $2 }' "$TMP/fx.out")
[ -n "$child" ] || fail "fork_exit: no child pid"
[ "$(count_files "$TMP/fx/f.*.pb.gz")" = 2 ] || fail "fork_exit: want 2 profiles: $(ls "$TMP/fx")"
has_marker "$TMP/fx/f.$child.pb.gz" || fail "fork_exit: the child's profile (at its _exit) lacks its samples"
# A worker that drops privileges (as nginx's and Apache's do after fork)
# cannot write into a directory only the starting user may write: the
# message names the switch, not just "Permission denied"; once the
# directory is writable for the worker, its profile is written. As root only.
if [ "$(id -u)" = 0 ]; then
	mkdir "$TMP/drop"
	chmod 755 "$TMP/drop"
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,output=$TMP/drop/d.%p.pb.gz" \
		"$P" dropuid 65534 >"$TMP/drop.out" 2>"$TMP/drop.err" || fail "dropuid: failed: $(cat "$TMP/drop.err")"
	child=$(awk '$1 == "child" { print $2 }' "$TMP/drop.out")
	[ -n "$child" ] || fail "dropuid: no child pid"
	grep -q "cannot write profile $TMP/drop/d.$child.pb.gz: Permission denied; this process now runs as uid 65534 gid 65534, not the uid 0 gid 0 it started as" "$TMP/drop.err" ||
		fail "dropuid: no message naming the user switch: $(cat "$TMP/drop.err")"
	[ "$(count_files "$TMP/drop/d.*.pb.gz")" = 1 ] || fail "dropuid: want the parent's profile only: $(ls "$TMP/drop")"
	chmod 711 "$TMP"
	chmod 1777 "$TMP/drop"
	rm -f "$TMP"/drop/*
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,output=$TMP/drop/d.%p.pb.gz" \
		"$P" dropuid 65534 >"$TMP/drop.out" 2>"$TMP/drop.err" || fail "dropuid: failed: $(cat "$TMP/drop.err")"
	child=$(awk '$1 == "child" { print $2 }' "$TMP/drop.out")
	[ ! -s "$TMP/drop.err" ] || fail "dropuid: stderr with a writable directory: $(cat "$TMP/drop.err")"
	[ "$(stat -c %u "$TMP/drop/d.$child.pb.gz" 2>/dev/null)" = 65534 ] ||
		fail "dropuid: no profile written by the worker: $(ls -l "$TMP/drop")"
	has_marker "$TMP/drop/d.$child.pb.gz" || fail "dropuid: the worker's profile lacks its samples"
fi
echo "procs: ok"
