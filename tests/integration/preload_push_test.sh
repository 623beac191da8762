#!/usr/bin/env bash
# preload_push_test.sh: push= sends profiles to a receiver (a loopback
# python3 one-off, push_receiver.py, alive at most 60 s) in Pyroscope's
# /ingest form, and a receiver that is down, answers 500 or never answers
# does not change the program: same output, nothing on stderr but the one
# line saying pushing failed, and a run time within the bound below.
# (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/preload_smoke_test.sh"

command -v python3 >/dev/null || skip "python3 is not installed"
P=$AP_PROGDIR
RECV=$(dirname "$0")/push_receiver.py
receivers=()
trap 'for r in "${receivers[@]}"; do kill "$r" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT

start_receiver() { # MODE DIR: sets $port
	mkdir -p "$2"
	python3 "$RECV" "$1" "$2" 60 &
	receivers+=($!)
	local i
	for ((i = 0; i < 100; i++)); do
		[ -s "$2/port" ] && break
		sleep 0.1
	done
	port=$(cat "$2/port") || fail "receiver $1 did not start"
}

now_ms() { date +%s%3N; }

# timed NAME OPTIONS: grow_rss under the runtime; sets $ms (wall time).
timed() {
	local t0
	t0=$(now_ms)
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="$2,output=$TMP/$1.pb.gz" \
		"$P/grow_rss" 8 16 8 16 >"$TMP/$1.out" 2>"$TMP/$1.err" ||
		fail "$1: the program failed: $(head -3 "$TMP/$1.err")"
	ms=$(($(now_ms) - t0))
	echo "$1: $ms ms"
	[ "$(cat "$TMP/$1.out")" = done ] || fail "$1: output changed"
}

# --- a good receiver gets parseable pprof bodies and Pyroscope's parameters
start_receiver good "$TMP/good"
timed good "push=http://127.0.0.1:$port/ingest?tenant=t,push_interval=300ms,push_name=svc{env=test}"
[ ! -s "$TMP/good.err" ] || fail "good: stderr: $(head -3 "$TMP/good.err")"
n=$(count_files "$TMP/good/*.body")
# about 2.5 s of run at 300 ms plus the exit profile; at least 3 whatever
# the machine's load
[ "$n" -ge 3 ] || fail "good: $n profiles received, want at least 3"
for ((i = 0; i < n; i++)); do
	line=$(cat "$TMP/good/$i.line")
	case $line in
	"POST /ingest?tenant=t&name=svc%7Benv%3Dtest%7D&from="*"&until="*"&format=pprof&spyName=allocprof HTTP/1.1") ;;
	*) fail "good: request line '$line'" ;;
	esac
	cp "$TMP/good/$i.body" "$TMP/good/$i.pb.gz"
	check_readable "$TMP/good/$i.pb.gz"
done
check_readable "$TMP/good.pb.gz" # the file at exit is written as before

# --- baseline: the same run without push
timed base "dump_at_exit=1"
base=$ms

# Bound: no push work runs in the program's threads, and at exit the
# program waits for its last profile at most PUSH_EXIT_WAIT_MS (1 s). So a
# run may take 1 s longer than the baseline, plus the load of a shared
# machine: another baseline and 3 s. Were the sending done in the
# program's threads, each of the ~17 profiles of a 1.7 s run at
# push_interval=100ms would cost 3 attempts (1.5 s of backoff alone, 6 s
# against a receiver that never answers): 25 s or more.
bound=$((2 * base + 4000))
# --- a receiver that never answers
start_receiver slow "$TMP/slow"
timed slow "push=http://127.0.0.1:$port,push_interval=100ms"
[ "$ms" -le "$bound" ] || fail "slow receiver: $ms ms, baseline $base ms"
[ "$(grep -vc '^allocprof: push: could not deliver' "$TMP/slow.err")" = 0 ] ||
	fail "slow: stderr: $(head -3 "$TMP/slow.err")"

# --- a receiver that answers 500
start_receiver error "$TMP/error"
timed error "push=http://127.0.0.1:$port,push_interval=100ms"
[ "$ms" -le "$bound" ] || fail "erroring receiver: $ms ms, baseline $base ms"
grep -q "push: the receiver answered 500" "$TMP/error.err" || fail "error: no line about the 500"
[ "$(wc -l <"$TMP/error.err")" = 1 ] || fail "error: more than one line: $(cat "$TMP/error.err")"

# --- nobody listening: a port just freed
down=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
timed down "push=http://127.0.0.1:$down,push_interval=100ms"
[ "$ms" -le "$bound" ] || fail "no receiver: $ms ms, baseline $base ms"
[ "$(grep -vc '^allocprof: push: could not deliver' "$TMP/down.err")" = 0 ] ||
	fail "down: stderr: $(head -3 "$TMP/down.err")"
check_readable "$TMP/down.pb.gz"

# --- a routable address needs push_public=1; https is refused
LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="push=http://192.0.2.1:4040,dump_at_exit=0" "$P/grow_rss" 4 \
	>/dev/null 2>"$TMP/public.err"
grep -q "push=: not a loopback address" "$TMP/public.err" || fail "public: $(cat "$TMP/public.err")"
LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="push=https://127.0.0.1:4040,dump_at_exit=0" "$P/grow_rss" 4 \
	>/dev/null 2>"$TMP/https.err"
grep -q "no https" "$TMP/https.err" || fail "https: $(cat "$TMP/https.err")"
echo PASS
