#!/usr/bin/env bash
# stripped_functions_test.sh: frames of a stripped program's local
# functions are grouped by function. stripped_fns allocates from two
# file-local functions, three and two call sites each; a copy stripped of
# .symtab and debug information (`strip`, as release builds and
# distributions ship) runs under the runtime at rate=1. No symbol names
# those functions, but .eh_frame still says where each starts, so the
# report must show one row per function, named object+0xOFFSET where
# OFFSET is the function's start in the file (worked out here from the
# unstripped copy's symbol table and program headers), with the function's
# exact bytes and objects; the call sites' raw addresses are what
# --no-symbolize shows, one row each.
# AP_TEST_PRELOAD: needs the runtime.
set -euo pipefail
: "${AP_BINDIR:?}" "${AP_PROGDIR:?}"
CLI=$AP_BINDIR/allocprof
LIB=$AP_BINDIR/liballocprof_preload.so
PROG=$AP_PROGDIR/stripped_fns
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ap_stripped.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -r "$LIB" ] || fail "runtime not built: $LIB"
for t in python3 strip nm readelf; do
	command -v $t >/dev/null || { echo "SKIP: $t missing" >&2; exit 77; }
done

strip -o "$TMP/stripped_fns" "$PROG"
nm "$TMP/stripped_fns" 2>/dev/null | grep -q two_sites && fail "strip left the symbol table"
LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="rate=1,output=$TMP/p.pb.gz" \
	"$TMP/stripped_fns" > "$TMP/truth.txt"
"$CLI" report --alloc --json --top 0 "$TMP/p.pb.gz" > "$TMP/fn.json"
"$CLI" report --alloc --json --top 0 --no-symbolize "$TMP/p.pb.gz" > "$TMP/raw.json"
nm "$PROG" > "$TMP/nm.txt"
readelf -lW "$PROG" > "$TMP/ph.txt"

python3 - "$TMP" <<'PY'
import json, re, sys
d = sys.argv[1]
loads = []
for line in open(d + "/ph.txt"):
    f = line.split()
    if f and f[0] == "LOAD":
        loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # offset, vaddr, filesz
def offset(v):
    for off, va, sz in loads:
        if va <= v < va + sz:
            return v - va + off
    sys.exit("FAIL: no PT_LOAD holds %#x" % v)
start = {}
for line in open(d + "/nm.txt"):
    f = line.split()
    if len(f) == 3 and f[2] in ("two_sites_a", "two_sites_b"):
        start[f[2]] = offset(int(f[0], 16))
truth = {}
for line in open(d + "/truth.txt"):
    name, b, o = line.split()
    truth[name] = (int(b), int(o))
rows = json.load(open(d + "/fn.json"))["sites"]
bad = []
for name, off in start.items():
    want = "stripped_fns+0x%x" % off
    got = [r for r in rows if r["function"] == want]
    if len(got) != 1:
        bad.append("%s: want one row %s, rows: %s" % (name, want, [r["function"] for r in rows]))
        continue
    b, o = got[0]["bytes"], got[0]["objects"]
    if (round(b), round(o)) != truth[name]:
        bad.append("%s: %s B %s objects, truth %s" % (name, b, o, truth[name]))
# --no-symbolize: the five call sites, each a raw address of its own
raw = [r["function"] for r in json.load(open(d + "/raw.json"))["sites"]
       if r["function"].startswith("stripped_fns+0x")]
if len(raw) != 5:
    bad.append("--no-symbolize: want 5 call-site rows, got %s" % raw)
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
print("ok: %s" % ", ".join("%s -> stripped_fns+0x%x" % kv for kv in sorted(start.items())))
PY
