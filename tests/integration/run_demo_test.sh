#!/usr/bin/env bash
# run_demo_test.sh: the demo end to end at rate=1, where every number is
# exact: `allocprof run` on build/demo/demo, then `allocprof report --json`.
# The demo's known facts must come out to the byte: 4000 leaked 512-byte
# session tokens, two big arrays (4 + 8 MiB) live at exit out of four
# (1+2+4+8 MiB) allocated, 200000 jobs submitted and 200000 16-byte results
# allocated by the workers. AP_TEST_PRELOAD: runs the demo under the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

DEMO=$AP_BINDIR/demo/demo
[ -x "$DEMO" ] || fail "demo not built: $DEMO"
command -v python3 >/dev/null || skip "python3 is needed to read report --json"

bounded 120 "$DEMO" >"$TMP/plain.out" || fail "demo fails on its own"
bounded 120 "$CLI" run -q -r 1 -o "$TMP/demo.%p.pb.gz" -- "$DEMO" >"$TMP/prof.out" 2>"$TMP/prof.err" ||
	fail "demo under allocprof run: $(head -3 "$TMP/prof.err")"
cmp -s "$TMP/plain.out" "$TMP/prof.out" || fail "demo output changed under the runtime"
prof=$(echo "$TMP"/demo.*.pb.gz)
[ -s "$prof" ] || fail "no profile written"

for view in inuse alloc; do
	bounded 120 "$CLI" report --$view --top 0 --json "$prof" >"$TMP/$view.json" 2>"$TMP/report.err" ||
		fail "report --$view: $(head -3 "$TMP/report.err")"
done

# want VIEW FUNCTION BYTES OBJECTS: the site's estimate is exactly the
# truth and its interval has collapsed onto it (BYTES "-": not known here,
# only the collapse is checked).
want() {
	python3 - "$TMP/$1.json" "$2" "$3" "$4" <<'PY' || fail "$1 view: $2"
import json, sys
path, fn, nbytes, nobj = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
d = json.load(open(path))
rows = [s for s in d["sites"] if s["function"] == fn]
if len(rows) != 1:
    sys.exit("%s: %d rows for %s" % (path, len(rows), fn))
s = rows[0]
b = s["bytes"] if nbytes == "-" else int(nbytes)
got = (s["bytes"], s["bytes_lo"], s["bytes_hi"], s["objects"], s["objects_lo"], s["objects_hi"])
if got != (b, b, b, nobj, nobj, nobj):
    sys.exit("%s %s: bytes, lo, hi, objects, lo, hi = %s; want %s bytes in %d objects"
             % (path, fn, got, nbytes, nobj))
PY
}

want inuse remember_session 2048000 4000
want inuse make_big_array 12582912 2
want inuse cache_get - 64
want alloc make_big_array 15728640 4
want alloc submit_job - 200000
want alloc run_job 3200000 200000
want alloc remember_session 2048000 4000
echo "demo: ok"
