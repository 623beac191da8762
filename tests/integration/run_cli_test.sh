#!/usr/bin/env bash
# run_cli_test.sh: `allocprof run` end to end: usage errors, exit statuses
# and signal deaths passed through, signals forwarded, LD_PRELOAD and
# ALLOCPROF_OPTIONS composed, profiles found and summarized, processes the
# program leaves running named.
# AP_TEST_PRELOAD: runs programs under the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

P=$AP_PROGDIR
cd "$TMP" || exit 1

# expect_status WANT CMD...: CMD exits with WANT; stderr kept in $TMP/err.
expect_status() {
	local want=$1 st=0
	shift
	bounded 60 "$@" >"$TMP/out" 2>"$TMP/err" || st=$?
	[ "$st" = "$want" ] ||
		fail "'$*' exited $st, want $want; stderr: $(head -3 "$TMP/err")"
}

# --- usage -----------------------------------------------------------------
expect_status 0 "$CLI" run --help
grep -q '^usage: allocprof run' "$TMP/out" || fail "--help prints no usage"
expect_status 1 "$CLI" run
expect_status 1 "$CLI" run -r 0 -- true
expect_status 1 "$CLI" run -r 12x -- true
expect_status 1 "$CLI" run --format svg -- true
expect_status 1 "$CLI" run -e novalue -- true
expect_status 1 "$CLI" run -e rate=lots -- true
expect_status 1 "$CLI" run -e format=xml -- true
expect_status 1 "$CLI" run -o 'a,b' -- true
expect_status 1 "$CLI" run --no-such-flag -- true
grep -q . "$TMP/err" || fail "usage error without a message"

# --- the runtime is looked for beside the executable, then in the prefix ---
mkdir "$TMP/bin"
cp "$CLI" "$TMP/bin/allocprof"
st=0
bounded 60 "$TMP/bin/allocprof" run -q -o "$TMP/inst.%p.pb.gz" -- true 2>"$TMP/err" || st=$?
case $st in
0) echo "the runtime is installed in the prefix: found there" >&2 ;;
1) grep -q 'cannot find liballocprof_preload.so' "$TMP/err" ||
	fail "missing runtime: $(cat "$TMP/err")" ;;
*) fail "allocprof run without a runtime beside it: status $st: $(cat "$TMP/err")" ;;
esac

# --- command not found / not executable: one line, 127 / 126 --------------
expect_status 127 "$CLI" run -- ./no-such-command-here
[ "$(wc -l <"$TMP/err")" = 1 ] || fail "not-found message is not one line: $(cat "$TMP/err")"
grep -q 'no-such-command-here' "$TMP/err" || fail "not-found message does not name the command"
printf 'data\n' >"$TMP/not_exec"
expect_status 126 "$CLI" run -- "$TMP/not_exec"

# --- exit statuses and signal deaths pass through ---------------------------
expect_status 0 "$CLI" run -o "$TMP/s0.%p.pb.gz" -- "$P/exit_status" exit 0
expect_status 3 "$CLI" run -o "$TMP/s3.%p.pb.gz" -- "$P/exit_status" exit 3
expect_status 134 "$CLI" run -q -o "$TMP/sa.%p.pb.gz" -- "$P/exit_status" signal 6
expect_status 137 "$CLI" run -o "$TMP/sk.%p.pb.gz" -- "$P/exit_status" signal 9
grep -q 'died of signal 9' "$TMP/err" || fail "no word on the missing profile: $(cat "$TMP/err")"
check_readable "$TMP"/s3.*.pb.gz

# --- SIGTERM and SIGINT sent to allocprof reach the program ------------------
for sig in TERM INT; do
	rm -f "$TMP/ready"
	# A background job of a script starts with SIGINT ignored, and allocprof
	# (like nohup-aware tools) leaves ignored signals alone: reset them.
	env --default-signal=INT,TERM "$CLI" run -q -o "$TMP/w.%p.pb.gz" -- \
		"$P/exit_status" wait >"$TMP/ready" 2>&1 &
	runpid=$!
	for _ in $(seq 100); do
		grep -q ready "$TMP/ready" 2>/dev/null && break
		sleep 0.1
	done
	grep -q ready "$TMP/ready" || fail "program under allocprof run never started"
	kill -"$sig" "$runpid"
	for _ in $(seq 300); do
		kill -0 "$runpid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$runpid" 2>/dev/null; then
		pkill -KILL -P "$runpid" || true
		kill -KILL "$runpid"
		fail "SIG$sig to allocprof run: still running after 30 s"
	fi
	st=0
	wait "$runpid" || st=$?
	want=$((128 + $(kill -l "$sig")))
	[ "$st" = "$want" ] || fail "SIG$sig to allocprof run: status $st, want $want"
done

# --- environment composition ------------------------------------------------
jem=$(lib_path libjemalloc.so.2)
ALLOCPROF_OPTIONS="seed=7,rate=100" LD_PRELOAD="${jem:-}" \
	expect_status 0 "$CLI" run -q -r 4096 -e max_depth=16 -o "rel.%p.pb.gz" -- env
opts=$(sed -n 's/^ALLOCPROF_OPTIONS=//p' "$TMP/out")
pre=$(sed -n 's/^LD_PRELOAD=//p' "$TMP/out")
# run's own exec_note=1 first, so that the user's may turn it off.
case "$opts" in
exec_note=1,seed=7,rate=100,*rate=4096*) ;;
*) fail "user's ALLOCPROF_OPTIONS not kept before the command line's: '$opts'" ;;
esac
case "$opts" in
*"output=$TMP/rel.%p.pb.gz"*max_depth=16*) ;;
*) fail "output not made absolute or -e not appended: '$opts'" ;;
esac
case "$pre" in
"$(readlink -f "$LIB")"*|"$LIB"*) ;;
*) fail "runtime is not first in LD_PRELOAD: '$pre'" ;;
esac
if [ -n "$jem" ]; then
	case "$pre" in
	*" $jem") ;;
	*) fail "user's LD_PRELOAD not kept after the runtime: '$pre'" ;;
	esac
fi

# A wrapper that clears LD_PRELOAD leaves its program unprofiled: run says
# which program, once (exec_note=1); the user's options may turn it off.
expect_status 0 "$CLI" run -q -- env -u LD_PRELOAD /bin/true
grep -q '^allocprof: /bin/true is started without liballocprof_preload.so in its LD_PRELOAD' "$TMP/err" ||
	fail "no note of the unprofiled /bin/true: $(cat "$TMP/err")"
[ "$(grep -c 'is started without' "$TMP/err")" = 1 ] || fail "the note, more than once: $(cat "$TMP/err")"
ALLOCPROF_OPTIONS=exec_note=0 expect_status 0 "$CLI" run -q -- env -u LD_PRELOAD /bin/true
! grep -q 'is started without' "$TMP/err" || fail "exec_note=0 did not turn the note off"
# posix_spawn too (Rust's Command and GNU make start programs that way):
# the note for the empty environment only.
if command -v python3 >/dev/null; then
	expect_status 0 "$CLI" run -q -- python3 -c 'import os
for env in ({}, dict(os.environ)):
    os.waitpid(os.posix_spawn("/bin/true", ["true"], env), 0)'
	[ "$(grep -c 'is started without liballocprof_preload.so' "$TMP/err")" = 1 ] ||
		fail "posix_spawn: want one note: $(cat "$TMP/err")"
fi
# An exec that keeps the environment says nothing.
expect_status 0 "$CLI" run -q -- sh -c 'exec /bin/true'
! grep -q 'is started without' "$TMP/err" || fail "a note for an exec that keeps LD_PRELOAD: $(cat "$TMP/err")"

# -e output= and -e rate= are the same as -o and -r; size suffixes pass.
expect_status 0 "$CLI" run -q -r 64k -e output=rel2.%p.pb.gz -- env
case "$(sed -n 's/^ALLOCPROF_OPTIONS=//p' "$TMP/out")" in
"exec_note=1,rate=64k,output=$TMP/rel2.%p.pb.gz") ;;
*) fail "-r 64k / -e output= composed as: $(grep ALLOCPROF_OPTIONS "$TMP/out")" ;;
esac

# --- profiles: found, summarized, follow the -o pattern ---------------------
mkdir "$TMP/sub"
expect_status 0 "$CLI" run -r 1 -o "sub/out.%p.pb.gz" -- "$P/exit_status" exit 0
[ "$(count_files "$TMP/sub/out.*.pb.gz")" = 1 ] || fail "-o pattern not honoured"
grep -q "1 profile written: $TMP/sub/out\." "$TMP/err" ||
	fail "summary does not list the profile: $(head -3 "$TMP/err")"
[ "$(wc -l <"$TMP/err")" -ge 3 ] || fail "summary has no sites: $(cat "$TMP/err")"

# %t and %n patterns are found too.
expect_status 0 "$CLI" run -o "$TMP/tn.%t.%n.pb.gz" -- "$P/exit_status" exit 0
grep -q "1 profile written: $TMP/tn\." "$TMP/err" || fail "%t/%n profile not found: $(head -3 "$TMP/err")"

# heap_v2 output is jemalloc's text format.
expect_status 0 "$CLI" run --format heap_v2 -o "$TMP/h.%p.heap" -- "$P/exit_status" exit 0
h=$(echo "$TMP"/h.*.heap)
[ -s "$h" ] || fail "no heap_v2 profile written"
head -1 "$h" | grep -q '^heap_v2/524288$' || fail "heap_v2 header: $(head -1 "$h")"

# The program's own stdout is untouched by the summary (which is on stderr).
expect_status 0 "$CLI" run -o "$TMP/e.%p.pb.gz" -- echo hello
[ "$(cat "$TMP/out")" = hello ] || fail "stdout altered: $(cat "$TMP/out")"

# A program the loader cannot preload into: the program runs with its own
# status, and the message says why no profile came (not only that none
# did). Statically linked (found through PATH too), then set-user-ID for
# another user (only when running as root, who can make one).
printf 'int main(void) { return 3; }\n' >"$TMP/st.c"
if cc -static -o "$TMP/bin/static3" "$TMP/st.c" 2>/dev/null; then
	expect_status 3 "$CLI" run -o "$TMP/st.%p.pb.gz" -- "$TMP/bin/static3"
	grep -q "no profile was written: $TMP/bin/static3 is statically linked" "$TMP/err" ||
		fail "static program: $(cat "$TMP/err")"
	PATH=$TMP/bin:$PATH expect_status 3 "$CLI" run -o "$TMP/st.%p.pb.gz" -- static3
	grep -q "no profile was written: static3 is statically linked" "$TMP/err" ||
		fail "static program through PATH: $(cat "$TMP/err")"
else
	echo "static part skipped: no static libc to link with" >&2
fi
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	cp "$(type -P true)" "$TMP/bin/sutrue"
	chown nobody "$TMP/bin/sutrue" && chmod u+s,a+rx "$TMP/bin/sutrue" "$TMP" "$TMP/bin"
	expect_status 0 "$CLI" run -o "$TMP/su.%p.pb.gz" -- "$TMP/bin/sutrue"
	grep -q "sutrue is set-user-ID or set-group-ID: the dynamic loader ignores" "$TMP/err" ||
		fail "set-user-ID program: $(cat "$TMP/err")"
fi
# A Go program (with cgo, so it is dynamically linked and its C code's
# malloc is profiled) ends with the exit_group system call, not libc's
# exit: the exit profile never comes. The runtime says so as it starts,
# run says so at the end, and periodic profiles (interval=) do come.
if command -v go >/dev/null && command -v gcc >/dev/null; then
	mkdir -p "$TMP/gosrc" "$TMP/gohome"
	cat >"$TMP/gosrc/main.go" <<'EOF'
package main

// #include <stdlib.h>
// static void *c_alloc(size_t n) { return malloc(n); }
import "C"
import (
	"time"
	"unsafe"
)

var keep []unsafe.Pointer

func main() {
	for i := 0; i < 1000; i++ {
		keep = append(keep, C.c_alloc(1000))
	}
	time.Sleep(300 * time.Millisecond)
}
EOF
	if (cd "$TMP/gosrc" && HOME=$TMP/gohome GOCACHE=$TMP/gocache GOPATH=$TMP/gopath \
		GOTOOLCHAIN=local GOPROXY=off GOFLAGS= GO111MODULE=off CGO_ENABLED=1 \
		bounded 300 go build -o "$TMP/bin/gocgo" main.go) >"$TMP/gobuild" 2>&1; then
		expect_status 0 "$CLI" run -o "$TMP/go.%p.pb.gz" -- "$TMP/bin/gocgo"
		grep -q "^allocprof: this is a Go program: Go ends the process without running exit handlers" \
			"$TMP/err" || fail "no Go warning from the runtime: $(cat "$TMP/err")"
		grep -q "no profile was written: $TMP/bin/gocgo is a Go program" "$TMP/err" ||
			fail "Go program: $(cat "$TMP/err")"
		expect_status 0 "$CLI" run -r 1 -e interval=100ms -o "$TMP/goi.%p.pb.gz" -- "$TMP/bin/gocgo"
		! grep -q "this is a Go program" "$TMP/err" || fail "Go warning despite interval="
		"$CLI" report --inuse --json --top 0 "$TMP"/goi.*.pb.gz >"$TMP/go.json" ||
			fail "interval= in Go wrote no readable profile: $(cat "$TMP/err")"
		grep -q '"function":"c_alloc","file":"[^"]*","line":[0-9]*,"several_files":false,"stack":\[[^]]*\],"bytes":1000000,' \
			"$TMP/go.json" || fail "Go program's C allocations: $(cat "$TMP/go.json")"
	else
		echo "Go part skipped: go build failed: $(tail -3 "$TMP/gobuild")" >&2
	fi
fi

# An ordinary program that writes no profile keeps the plain message.
expect_status 0 "$CLI" run -o "$TMP/none.%p.pb.gz" -e dump_at_exit=0 -- true
grep -q "no profile was written (pattern " "$TMP/err" || fail "plain case: $(cat "$TMP/err")"

# --- a program that leaves a process running (a daemon's start) -------------
# The summary names it and says its profile comes later; the profile is
# then written when it exits, with its own samples.
mkdir "$TMP/bg"
expect_status 0 "$CLI" run -r 4096 -o "$TMP/bg/b.%p.pb.gz" -- "$P/proc_events" bg "$TMP/bg.stop"
child=$(awk '$1 == "child" { print $2 }' "$TMP/out")
[ -n "$child" ] || fail "bg: no child pid: $(cat "$TMP/out")"
grep -q "^allocprof: proc_events left 1 process running (pid $child): its profiles are written when it exits, to $TMP/bg/b.%p.pb.gz, and are not in this summary\$" "$TMP/err" ||
	fail "bg: no line naming the process left running: $(cat "$TMP/err")"
[ ! -e "$TMP/bg/b.$child.pb.gz" ] || fail "bg: the child's profile exists before it exits"
touch "$TMP/bg.stop"
for _ in $(seq 100); do [ -e "$TMP/bg/b.$child.pb.gz" ] && break; sleep 0.1; done
[ -e "$TMP/bg/b.$child.pb.gz" ] || fail "bg: no profile from the process left running: $(ls "$TMP/bg")"
"$CLI" report "$TMP/bg/b.$child.pb.gz" >"$TMP/bg.rep" 2>&1 || fail "bg: report: $(cat "$TMP/bg.rep")"
grep -q keep_marker_block "$TMP/bg.rep" || fail "bg: the child's profile lacks its samples: $(cat "$TMP/bg.rep")"
# A program that leaves nothing running gets no such line.
expect_status 0 "$CLI" run -r 4096 -o "$TMP/bg/e.%p.pb.gz" -- "$P/proc_events" exit
! grep -q "left .* running" "$TMP/err" || fail "exit: a process left running? $(cat "$TMP/err")"

echo "run cli: ok"
