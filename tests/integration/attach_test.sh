#!/usr/bin/env bash
# attach_test.sh: `allocprof attach` and `detach` on a running program
# (progs/attach_target, started without the runtime): during a window at
# rate 1 the profile holds exactly the allocations the program counted, in
# the sites it made them (C, C++, and libz dlopen'ed while attached); 20
# attach/detach cycles on the same process; output and exit status equal
# to a run never attached (and a thread's vector registers unchanged by
# the calls made in it); over jemalloc and tcmalloc when installed; and
# each refusal (no such process, preloaded, statically linked, musl, another
# user's process) is one line, non-zero, with the target still running;
# an attach ended by SIGINT detaches; a target exiting while attached.
# (AP_TEST_PRELOAD: needs the runtime; skipped in sanitizer builds.)
. "$(dirname "$0")/attach_common.sh"
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

# start NAME [ENV...]: the target in $TMP/NAME; sets pid.
start() {
	local name=$1
	shift
	mkdir -p "$TMP/$name"
	# not under timeout(1): $! must be the target itself (cleanup kills it)
	env "$@" "$PROG" "$TMP/$name" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null &
	pid=$!
	PIDS+=("$pid")
	sleep 0.3
	kill -0 "$pid" 2>/dev/null || fail "$name: exited early: $(cat "$TMP/$name.err")"
}

# finish NAME PID: stop the target; its exit status in st.
finish() {
	touch "$TMP/$1/stop"
	st=0
	wait "$2" || st=$?
}

# window NAME PID: open and close the counting window; wait for the counts.
window() {
	touch "$TMP/$1/window"
	sleep 1.5
	touch "$TMP/$1/window.end"
	for _ in $(seq 100); do
		[ -e "$TMP/$1/window.done" ] && return 0
		sleep 0.1
	done
	fail "$1: no counts after the window"
}

# check_window PROFILE COUNTS: window_c and window_cxx exact, libz's
# deflateInit2_ among the stacks, the heap at attach recorded.
check_window() {
	"$CLI" report --alloc --json "$1" >"$TMP/r.json" || fail "report $1"
	python3 - "$TMP/r.json" "$2" <<'EOF' || fail "$1: window not exact (above)"
import json, sys
r = json.load(open(sys.argv[1]))
want = {}
for line in open(sys.argv[2]):
    k, o, b = line.split()
    want[k] = (int(o), int(b))
def site(name):
    s = [x for x in r["sites"] if x["function"].split("(")[0] == name]
    return (sum(x["objects"] for x in s), sum(x["bytes"] for x in s))
for k, fn in (("c", "window_c"), ("cxx", "window_cxx")):
    got = site(fn)
    if got != want[k] or want[k][0] == 0:
        sys.exit("%s: profile %r, program counted %r" % (fn, got, want[k]))
if not any("deflateInit2_" in x["stack"] for x in r["sites"]):
    sys.exit("no site in libz's deflateInit2_ (dlopen'ed while attached)")
EOF
	"$CLI" report "$1" | grep -q "heap at attach" || fail "$1: no heap-at-attach line"
}

# run_case NAME [ENV...]: plain run, then attached run (window, 20 cycles).
run_case() {
	local name=$1
	shift
	start "$name-plain" "$@"
	local p=$pid
	sleep 1
	finish "$name-plain" "$p"
	local plain_st=$st
	[ "$plain_st" = 0 ] || { [ "$plain_st" = 77 ] && skip "libz.so.1 missing"; fail "$name: plain exit $plain_st"; }
	start "$name" "$@"
	p=$pid
	"$CLI" attach --no-wait -q -r 1 -o "$TMP/$name.%n.pb.gz" "$p" ||
		fail "$name: attach failed"
	window "$name" "$p"
	"$CLI" detach "$p" 2>"$TMP/$name.detach" || fail "$name: detach: $(cat "$TMP/$name.detach")"
	check_window "$TMP/$name.0.pb.gz" "$TMP/$name/counts"
	for i in $(seq 20); do
		"$CLI" attach -q -r 4096 -d 0.1 -o "$TMP/$name.cycle.%n.pb.gz" "$p" ||
			fail "$name: attach/detach cycle $i failed"
	done
	[ "$(ls "$TMP/$name".cycle.*.pb.gz | wc -l)" = 20 ] || fail "$name: 20 cycles, not 20 profiles"
	"$CLI" report "$TMP/$name.cycle.19.pb.gz" >/dev/null || fail "$name: cycle profile unreadable"
	finish "$name" "$p"
	[ "$st" = "$plain_st" ] || fail "$name: exit $st, plain $plain_st: $(cat "$TMP/$name.err")"
	cmp -s "$TMP/$name.out" "$TMP/$name-plain.out" ||
		fail "$name: output differs: $(cat "$TMP/$name.out") vs $(cat "$TMP/$name-plain.out")"
	[ ! -s "$TMP/$name.err" ] || fail "$name: stderr: $(cat "$TMP/$name.err")"
}

run_case glibc
je=$(lib_path libjemalloc.so.2)
[ -z "$je" ] || run_case jemalloc LD_PRELOAD="$je"
tc=$(lib_path libtcmalloc_minimal.so.4)
[ -z "$tc" ] || run_case tcmalloc LD_PRELOAD="$tc"

# The attach's calls run in a thread stopped in the middle of its own code:
# it must resume with every register as it left it, vector registers too
# (a thread stopped between computing a value in %xmm0 and storing it once
# resumed with libc's strchr pattern instead, and crashed). attach_vecregs
# keeps known values in %xmm0-15 in a loop that is the only safe point.
mkdir -p "$TMP/vec"
"$AP_PROGDIR/attach_vecregs" "$TMP/vec" >"$TMP/vec.out" 2>"$TMP/vec.err" </dev/null &
vpid=$!
PIDS+=("$vpid")
sleep 0.2
for i in 1 2 3; do
	"$CLI" attach -q -r 4096 -d 0.1 -o "$TMP/vec.%n.pb.gz" "$vpid" ||
		fail "vecregs: attach/detach cycle $i failed"
done
touch "$TMP/vec/stop"
st=0
wait "$vpid" || st=$?
[ "$st" = 0 ] || fail "vecregs: exit $st: $(cat "$TMP/vec.err")"
[ "$(cat "$TMP/vec.out")" = "vector mismatches 0" ] ||
	fail "vecregs: the attach changed the thread's vector registers: $(cat "$TMP/vec.out")"

# Refusals: one line on stderr, non-zero, target untouched.
refuse() {
	local what=$1 want=$2
	shift 2
	local st=0
	"$@" >"$TMP/refuse.out" 2>"$TMP/refuse.err" || st=$?
	[ "$st" != 0 ] || fail "$what: attach succeeded"
	[ "$(wc -l <"$TMP/refuse.err")" = 1 ] || fail "$what: not one line: $(cat "$TMP/refuse.err")"
	grep -q "$want" "$TMP/refuse.err" || fail "$what: message: $(cat "$TMP/refuse.err")"
}
refuse "no such process" "no such process" "$CLI" attach -d 0.1 999999999
start pre LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="dump_at_exit=0"
refuse preloaded "already runs under allocprof" "$CLI" attach -d 0.1 "$pid"
finish pre "$pid"
[ "$st" = 0 ] || fail "preloaded target: exit $st"
if echo 'int main(void){for(;;)__asm__ volatile("pause");}' >"$TMP/spin.c" &&
	cc -static -o "$TMP/spin" "$TMP/spin.c" 2>/dev/null; then
	"$TMP/spin" &
	spid=$!
	PIDS+=("$spid")
	refuse static "statically linked" "$CLI" attach -d 0.1 "$spid"
	kill -0 "$spid" || fail "static target died"
	kill "$spid"
fi
# A musl process (musl-gcc from Debian's musl-tools; scripts/deps.sh).
if command -v musl-gcc >/dev/null &&
	musl-gcc -o "$TMP/spin_musl" "$TMP/spin.c" 2>/dev/null; then
	"$TMP/spin_musl" &
	mpid=$!
	PIDS+=("$mpid")
	refuse musl "uses musl libc" "$CLI" attach -d 0.1 "$mpid"
	kill -0 "$mpid" || fail "musl target died"
	kill "$mpid"
else
	echo "note: no musl-gcc, the musl refusal is not tested"
fi
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$CLI"; then
	start other
	refuse "another user" "another user" setpriv --reuid=65534 --regid=65534 \
		--clear-groups "$CLI" attach -d 0.1 "$pid"
	finish other "$pid"
	[ "$st" = 0 ] || fail "other user's target: exit $st"
fi
# wait_attached FILE: until the attach writing its messages to FILE says
# it is attached (a fixed sleep raced it on a loaded machine).
wait_attached() {
	for _ in $(seq 300); do
		grep -q "attached to" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "not attached after 30 s: $(cat "$1")"
}

# Attached until interrupted: SIGINT (Ctrl-C) to the command detaches and
# writes the profile; the target runs on and ends as usual.
start intr
p=$pid
"$CLI" attach -r 65536 -o "$TMP/intr.%n.pb.gz" "$p" 2>"$TMP/intr.attach" &
apid=$!
wait_attached "$TMP/intr.attach"
sleep 0.5
kill -INT "$apid"
wait "$apid" || fail "interrupted attach: exit $?: $(cat "$TMP/intr.attach")"
grep -q "detached from $p" "$TMP/intr.attach" || fail "interrupted: $(cat "$TMP/intr.attach")"
"$CLI" report "$TMP/intr.0.pb.gz" >/dev/null || fail "interrupted attach: no profile"
finish intr "$p"
[ "$st" = 0 ] || fail "interrupted attach: target exit $st"
# A process that exits while attached: the command says so and succeeds.
start gone
p=$pid
( wait_attached "$TMP/gone.attach"; sleep 0.5; touch "$TMP/gone/stop" ) &
"$CLI" attach -r 65536 -d 30 -o "$TMP/gone.%n.pb.gz" "$p" 2>"$TMP/gone.attach" ||
	fail "exit while attached: $(cat "$TMP/gone.attach")"
grep -q "exited while attached" "$TMP/gone.attach" || fail "$(cat "$TMP/gone.attach")"
wait "$p" || fail "exit while attached: target exit $?"
echo PASS
