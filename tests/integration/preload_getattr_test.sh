#!/usr/bin/env bash
# preload_getattr_test.sh: a sample taken inside pthread_getattr_np does
# not hang the thread. glibc's holds the thread's own lock while it
# allocates, and a thread's first capture used to look its stack up
# through the same function: waiting on that lock for ever. Java's virtual
# machine asks first thing in every thread it starts, so `java` under the
# runtime at rate=1 hung at start-up; at the default rate the same could
# happen to any thread whose first sample fell there. progs/getattr_threads
# does what the JVM does in 8 threads (and the main thread): at rate=1, with
# each unwinder, it must finish with the output it has alone, and the
# profile must hold both the thread_work blocks, exactly, and the blocks
# glibc allocated inside pthread_getattr_np (sampled there, their stack
# captured without the bounds, which the thread's next capture looks up).
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/getattr_threads
[ -x "$PROG" ] || fail "not built: $PROG"
command -v python3 >/dev/null || { echo "SKIP: python3 missing" >&2; exit 77; }

bounded 60 "$PROG" >"$TMP/alone.out" || fail "getattr_threads fails alone"
for u in libunwind fp libgcc; do
	st=0
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,unwinder=$u,output=$TMP/$u.pb.gz" \
		"$PROG" >"$TMP/$u.out" 2>"$TMP/$u.err" || st=$?
	[ $st = 0 ] || fail "unwinder=$u: exit status $st (124: hung): $(head -3 "$TMP/$u.err")"
	cmp -s "$TMP/alone.out" "$TMP/$u.out" || fail "unwinder=$u: output $(head -3 "$TMP/$u.out")"
	"$CLI" report --alloc --json --top 0 "$TMP/$u.pb.gz" >"$TMP/$u.json" ||
		fail "unwinder=$u: report failed"
	python3 - "$TMP/$u.json" "$TMP/alone.out" "$u" <<'PY' || exit 1
import json, sys
rows = json.load(open(sys.argv[1]))["sites"]
want = dict(l.split() for l in open(sys.argv[2]) if l.strip() != "ok")
by = {r["function"]: r for r in rows}
for fn, b in want.items():
    if fn not in by or round(by[fn]["bytes"]) != int(b):
        sys.exit("FAIL: unwinder=%s: %s: want %s bytes, rows %s"
                 % (sys.argv[3], fn, b, [(r["function"], r["bytes"]) for r in rows]))
inside = [r for r in rows if "getattr_np" in r["function"]]
if not inside or sum(r["objects"] for r in inside) < 8:
    sys.exit("FAIL: unwinder=%s: no samples inside pthread_getattr_np: %s"
             % (sys.argv[3], [(r["function"], r["objects"]) for r in rows]))
print("ok   unwinder=%s" % sys.argv[3])
PY
done
echo PASS
