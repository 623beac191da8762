#!/usr/bin/env bash
# preload_smoke_test.sh: helpers shared by the runtime's integration tests,
# and, when run as a test, the smallest end-to-end check: a program runs
# under liballocprof_preload.so with unchanged output and exit status and
# writes one readable profile. (AP_TEST_PRELOAD: needs the runtime; skipped
# in sanitizer builds.)
#
# Other tests source this file: `. "$(dirname "$0")/preload_smoke_test.sh"`.
# Sourcing only defines the helpers and creates $TMP (removed at exit).

set -euo pipefail

: "${AP_BINDIR:?AP_BINDIR must name the build directory}"
: "${AP_PROGDIR:=$AP_BINDIR/tests/integration/progs}"
CLI=$AP_BINDIR/allocprof
LIB=$AP_BINDIR/liballocprof_preload.so
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ap_preload.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

[ -r "$LIB" ] || fail "runtime not built: $LIB"
[ -x "$CLI" ] || fail "CLI not built: $CLI"

# bounded SECONDS CMD...: run with a hard time limit (exit 124 on timeout).
bounded() {
	local secs=$1
	shift
	timeout --kill-after=5 "$secs" "$@"
}

# lib_path SONAME: absolute path of an installed shared library, or "".
# awk reads to the end: exiting early would kill ldconfig with SIGPIPE,
# which pipefail turns into a failure of the whole test.
lib_path() {
	ldconfig -p | awk -v n="$1" '!found && $1 == n && /x86-64/ { print $NF; found = 1 }'
}

# go_pprof ARGS...: `go tool pprof` with a private, offline Go environment.
go_pprof() {
	mkdir -p "$TMP/gohome" "$TMP/gocache"
	HOME=$TMP/gohome GOCACHE=$TMP/gocache GOTOOLCHAIN=local GOPROXY=off \
		GOFLAGS='' PPROF_TMPDIR=$TMP bounded 120 go tool pprof "$@"
}

# check_readable FILE: the profile decodes. allocprof's own reader is used
# when this build has a reading command; `go tool pprof -raw` (the reference
# reader) whenever Go is installed. At least one of them must exist.
check_readable() {
	local f=$1 checked=0
	[ -s "$f" ] || fail "$f: missing or empty"
	gzip -t "$f" 2>/dev/null || fail "$f: not gzip data"
	for cmd in report folded; do
		if "$CLI" "$cmd" --help >/dev/null 2>&1; then
			bounded 120 "$CLI" "$cmd" "$f" >"$TMP/read.out" 2>"$TMP/read.err" ||
				fail "$f: allocprof $cmd cannot read it: $(head -3 "$TMP/read.err")"
			checked=1
			break
		fi
	done
	if command -v go >/dev/null; then
		go_pprof -raw -symbolize=none "$f" >"$TMP/raw.out" 2>"$TMP/raw.err" ||
			fail "$f: go tool pprof cannot read it: $(head -3 "$TMP/raw.err")"
		grep -q '^Samples:' "$TMP/raw.out" ||
			fail "$f: go tool pprof -raw shows no samples section"
		checked=1
	fi
	[ $checked = 1 ] || skip "no profile reader (allocprof report/folded or go)"
}

# same_run NAME SECONDS ENV... -- CMD...: run CMD plainly and under the
# runtime (LD_PRELOAD, ALLOCPROF_OPTIONS from the ENV words, which are
# VAR=VALUE assignments for the profiled run only); both must exit with the
# same status and byte-identical stdout. Leaves $TMP/NAME.plain/.prof.
same_run() {
	local name=$1 secs=$2
	shift 2
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	local st_plain=0 st_prof=0
	bounded "$secs" "$@" </dev/null >"$TMP/$name.plain" 2>"$TMP/$name.plain.err" ||
		st_plain=$?
	bounded "$secs" env "${envs[@]}" "$@" </dev/null >"$TMP/$name.prof" \
		2>"$TMP/$name.prof.err" || st_prof=$?
	[ $st_prof != 124 ] || fail "$name: timed out under the runtime"
	[ $st_plain = "$st_prof" ] ||
		fail "$name: exit status $st_prof under the runtime, $st_plain without; stderr: $(tail -3 "$TMP/$name.prof.err") / without: $(tail -3 "$TMP/$name.plain.err")"
	cmp -s "$TMP/$name.plain" "$TMP/$name.prof" ||
		fail "$name: output differs under the runtime: $(diff "$TMP/$name.plain" "$TMP/$name.prof" | head -5)"
}

# over_alloc SECS SEED ALLOC NAME CMD...: CMD over the allocator ALLOC
# (a library path, or "" for glibc) alone and under the runtime over the same
# ALLOC: both must exit 0 with byte-identical output (stdout and stderr), and
# the profiles the runtime wrote must decode.
over_alloc() {
	local secs=$1 seed=$2 alloc=$3 name=$4
	shift 4
	local dir=$TMP/prof/$name st_plain=0 st_prof=0
	mkdir -p "$dir"
	bounded "$secs" env LD_PRELOAD="$alloc" "$@" >"$TMP/$name.plain" 2>&1 || st_plain=$?
	bounded "$secs" env LD_PRELOAD="$LIB $alloc" \
		ALLOCPROF_OPTIONS="seed=$seed,output=$dir/p.%p.pb.gz" "$@" \
		>"$TMP/$name.prof" 2>&1 || st_prof=$?
	[ "$st_plain" = 0 ] || fail "$name: fails even without the runtime ($st_plain)"
	[ "$st_prof" = 0 ] || fail "$name: exit status $st_prof under the runtime: $(tail -3 "$TMP/$name.prof")"
	cmp -s "$TMP/$name.plain" "$TMP/$name.prof" ||
		fail "$name: output differs: $(diff "$TMP/$name.plain" "$TMP/$name.prof" | head -5)"
	check_profiles "$name" "$dir"
}

# check_profiles NAME DIR: DIR holds at least one p.*.pb.gz and all decode.
check_profiles() {
	local name=$1 dir=$2 f n=0
	for f in "$dir"/p.*.pb.gz; do
		[ -e "$f" ] || continue
		check_readable "$f"
		n=$((n + 1))
	done
	[ $n -ge 1 ] || fail "$name: no profile written"
	echo "$name: $n profile(s) ok" >&2
}

# objects_of FILE FUNCTION: the objects `allocprof report --alloc --by
# function` gives FUNCTION (the field after the share, on its line).
objects_of() {
	"$CLI" report --alloc --by function "$1" 2>/dev/null |
		awk -v f="$2" '{
			hit = 0
			for (i = 1; i <= NF; i++) if ($i == f) hit = 1
			if (!hit) next
			for (i = 1; i < NF; i++) if ($i ~ /%$/) { print $(i + 1); exit }
		}'
}

# wait_ready FILE: until FILE has a line "ready" (at most 10 s); false if not.
wait_ready() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -qs '^ready$' "$1" && return 0
		sleep 0.1
	done
	return 1
}

# count_files GLOB: number of files matching GLOB.
count_files() {
	local n=0 f
	for f in $1; do
		[ -e "$f" ] && n=$((n + 1))
	done
	echo $n
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	mkdir -p "$TMP/smoke"
	same_run smoke 60 LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="output=$TMP/smoke/p.%p.pb.gz,seed=1" \
		-- "$AP_PROGDIR/exit_status" exit 0
	[ ! -s "$TMP/smoke.prof.err" ] ||
		fail "runtime printed on stderr: $(head -3 "$TMP/smoke.prof.err")"
	n=$(count_files "$TMP/smoke/p.*.pb.gz")
	[ "$n" = 1 ] || fail "expected one profile, found $n"
	check_readable "$TMP"/smoke/p.*.pb.gz
	echo "preload smoke: ok"
fi
