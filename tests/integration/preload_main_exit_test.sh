#!/usr/bin/env bash
# preload_main_exit_test.sh: a process whose main thread ends with
# pthread_exit ends when its last other thread does. glibc ends it then
# with exit(0), but counts the runtime's own threads (the dumper, the HTTP
# server, the push sender) among the others, so under the runtime such a
# process went on for ever. progs/main_pthread_exit does that with four
# workers; with the default options, at rate=1, with the HTTP endpoint and
# with interval dumps, it must end within the time bound with status 0,
# print what it prints alone, and leave its profile at exit, which at
# rate=1 holds the workers' allocations exactly.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/main_pthread_exit
[ -x "$PROG" ] || fail "not built: $PROG"
command -v python3 >/dev/null || { echo "SKIP: python3 missing" >&2; exit 77; }

bounded 30 "$PROG" >"$TMP/alone.out" || fail "main_pthread_exit fails alone"
want=$(awk '$1 == "worker_alloc" { print $2 }' "$TMP/alone.out")
i=0
for opts in "" rate=1 "http=0,http_portfile=$TMP/port" interval=100ms; do
	i=$((i + 1))
	st=0
	bounded 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="${opts:+$opts,}output=$TMP/p$i.%p.pb.gz" \
		"$PROG" >"$TMP/$i.out" 2>"$TMP/$i.err" || st=$?
	[ $st = 0 ] || fail "options '$opts': exit status $st (124 or 137: it never ended): $(head -3 "$TMP/$i.err")"
	cmp -s "$TMP/alone.out" "$TMP/$i.out" || fail "options '$opts': output $(head -3 "$TMP/$i.out")"
	prof=$(ls -t "$TMP"/p$i.*.pb.gz 2>/dev/null | head -1)
	[ -n "$prof" ] || fail "options '$opts': no profile at exit"
	"$CLI" report --alloc --json --top 0 "$prof" >"$TMP/$i.json" || fail "report"
	if [ "$opts" = rate=1 ]; then
		python3 - "$TMP/$i.json" "$want" <<'PY' || exit 1
import json, sys
rows = json.load(open(sys.argv[1]))["sites"]
got = [r for r in rows if r["function"] == "worker_alloc"]
if len(got) != 1 or round(got[0]["bytes"]) != int(sys.argv[2]):
    sys.exit("FAIL: worker_alloc: want %s bytes, rows %s"
             % (sys.argv[2], [(r["function"], r["bytes"]) for r in rows]))
PY
	fi
	echo "ok   options '$opts'"
done
echo PASS
