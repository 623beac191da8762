#!/usr/bin/env bash
# preload_fds_test.sh: the runtime holds no descriptor the program can see
# or collide with, and unwinding touches none it did not open itself in the
# same call (src/preload/README.md, "Guarantees"). libunwind 1.6's memory
# checks use a pipe; the runtime makes them descriptor-free
# (src/preload/unwind_nofd.c).
#  - progs/fd_daemon closes every descriptor >= 3, opens four data files
#    and writes known records while allocating from varied stacks; at rate
#    4096 and 1, with each unwinder, every record must be intact;
#  - `cat a a` under `ulimit -n 5` (three descriptors taken by the standard
#    streams, two left) prints a twice, as it does alone;
#  - a fresh profiled process has no descriptor beyond what it inherited;
#  - with the HTTP endpoint on (the one time the runtime holds descriptors:
#    a listening socket and a wake-up pipe), progs/fd_takeover puts its own
#    listener, pipe and data file on those numbers, by dup2 and by closing
#    everything and reopening, and uses them: the runtime must not read,
#    write, accept on or close any of them, in the process, in its fork
#    child or at exit, nor spin on them. Before the runtime checked the
#    object behind each number (src/preload/http.c, fd_still), the dup2 run
#    lost its descriptors in the fork child and found an "x" at the end of
#    its data file.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/fd_daemon
[ -x "$PROG" ] || fail "not built: $PROG"

# daemon NAME OPTIONS: the data files stay intact under the runtime.
daemon() {
	local name=$1 opts=$2 st=0
	mkdir -p "$TMP/$name"
	bounded 60 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="$opts,output=$TMP/$name/p.%p.pb.gz" \
		"$PROG" "$TMP/$name" 3000 >"$TMP/$name.out" 2>"$TMP/$name.err" || st=$?
	[ $st = 0 ] || fail "$name: exit status $st: $(head -3 "$TMP/$name.err")"
	[ "$(cat "$TMP/$name.out")" = ok ] || fail "$name: output $(head -3 "$TMP/$name.out")"
	check_profiles "$name" "$TMP/$name"
}

mkdir -p "$TMP/plain"
bounded 60 "$PROG" "$TMP/plain" 3000 >/dev/null || fail "fd_daemon fails alone"
for u in libunwind libgcc fp; do
	daemon "d4096_$u" "rate=4096,seed=1,unwinder=$u"
	daemon "d1_$u" "rate=1,seed=1,unwinder=$u"
done

# Two descriptors free: cat opens a, closes it, opens it again.
printf 'line\n' >"$TMP/a"
want=$(printf 'line\nline\n')
got=$(cd "$TMP" && ulimit -n 5 && bounded 30 env LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="rate=1,output=$TMP/cat.pb.gz" cat a a 2>&1) ||
	fail "cat a a under ulimit -n 5: $got"
[ "$got" = "$want" ] || fail "cat a a under ulimit -n 5 printed: $got"

# No descriptor of the runtime's own: the profiled ls of /proc/self/fd lists
# what the plain one lists (its own directory descriptor included).
plain=$(bounded 30 ls /proc/self/fd 9</dev/null | sort -n | tr '\n' ' ')
prof=$(bounded 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,dump_at_exit=0" \
	ls /proc/self/fd 9</dev/null | sort -n | tr '\n' ' ')
[ "$plain" = "$prof" ] || fail "descriptors alone: $plain; under the runtime: $prof"
TAKE=$AP_PROGDIR/fd_takeover
[ -x "$TAKE" ] || fail "not built: $TAKE"
for mode in dup2 closefrom; do
	st=0
	bounded 60 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="http=127.0.0.1:0,output=$TMP/take_$mode.%p.pb.gz" \
		"$TAKE" "$mode" "$TMP/take_$mode.data" >"$TMP/take_$mode.out" \
		2>"$TMP/take_$mode.err" || st=$?
	[ $st = 0 ] || fail "fd_takeover $mode: exit status $st: $(head -3 "$TMP/take_$mode.err")"
	[ "$(cat "$TMP/take_$mode.out")" = ok ] || fail "fd_takeover $mode: $(cat "$TMP/take_$mode.out")"
	[ "$(cat "$TMP/take_$mode.data")" = "$(printf 'parent\nchild')" ] ||
		fail "fd_takeover $mode: the data file holds: $(od -c "$TMP/take_$mode.data" | head -3)"
	ls "$TMP"/take_$mode.*.pb.gz >/dev/null 2>&1 || fail "fd_takeover $mode: no profile written"
done

echo "preload fds: ok"
