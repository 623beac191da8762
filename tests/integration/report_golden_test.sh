#!/usr/bin/env bash
# report_golden_test.sh: the report tells the truth. rpt_sites (known sites,
# known bytes) runs under the runtime at rate=1 (every allocation recorded,
# AP_TEST_PRELOAD), and `allocprof report --json` must give exactly its
# bytes and objects per function, intervals collapsed onto them, with the
# right source file and line for every site, in both views; --by line and
# --by stack, filters and the table output agree; C++ and Rust legacy names
# are demangled from DWARF and, in a copy without DWARF, from ELF symbols.
set -euo pipefail
: "${AP_BINDIR:?}" "${AP_PROGDIR:?}"
CLI=$AP_BINDIR/allocprof
LIB=$AP_BINDIR/liballocprof_preload.so
PROG=$AP_PROGDIR/rpt_sites
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ap_report.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -r "$LIB" ] || fail "runtime not built: $LIB"
command -v python3 >/dev/null || { echo "SKIP: python3 missing" >&2; exit 77; }

LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="rate=1,output=$TMP/prof.%p.pb.gz" \
	"$PROG" --truth > "$TMP/truth.txt"
prof=$(ls "$TMP"/prof.*.pb.gz)
[ "$(echo "$prof" | wc -l)" = 1 ] || fail "expected one profile, got: $prof"

for view in alloc inuse; do
	"$CLI" report --$view --json --top 0 "$prof" > "$TMP/$view.json"
done
"$CLI" report --alloc --by line --json --top 0 "$prof" > "$TMP/line.json"
"$CLI" report --alloc --by stack --json --top 0 "$prof" > "$TMP/stack.json"
"$CLI" report --alloc --focus '^make_(nodes|big)$' --json "$prof" > "$TMP/focus.json"
"$CLI" report --alloc --size 4096:4096 --json "$prof" > "$TMP/size.json"
"$CLI" report --alloc --sizes --json "$prof" > "$TMP/sizes.json"

python3 - "$TMP" <<'EOF'
import json, sys
d = sys.argv[1]
truth = {}
for line in open(d + "/truth.txt"):
    f, ab, ao, ib, io, ln = line.split()
    truth[f] = dict(alloc=(int(ab), int(ao)), inuse=(int(ib), int(io)), line=int(ln))
errors = []
def check(cond, msg):
    if not cond:
        errors.append(msg)
for view in ("alloc", "inuse"):
    r = json.load(open(f"{d}/{view}.json"))
    check(r["view"] == view and r["rate"] == 1 and r["level"] == 0.95, f"{view}: header {r}")
    sites = {s["function"]: s for s in r["sites"]}
    for f, t in truth.items():
        b, o = t[view]
        if b == 0:
            check(f not in sites, f"{view}: {f} should have nothing live")
            continue
        s = sites.get(f)
        check(s is not None, f"{view}: no site {f}")
        if s is None:
            continue
        check(s["bytes"] == b and s["bytes_lo"] == b and s["bytes_hi"] == b,
              f"{view}: {f} bytes {s['bytes']} [{s['bytes_lo']}, {s['bytes_hi']}] != {b}")
        check(s["objects"] == o and s["objects_lo"] == o and s["objects_hi"] == o,
              f"{view}: {f} objects {s['objects']} != {o}")
        check(s["samples"] == o, f"{view}: {f} samples {s['samples']} != {o}")
        check(s["interval"] == "exact", f"{view}: {f} interval {s['interval']}")
        check(s["file"].endswith("tests/integration/progs/rpt_sites.c"), f"{f}: file {s['file']}")
        check(s["line"] == t["line"], f"{f}: line {s['line']} != {t['line']}")
        check(s["stack"][0] == f and "main" in s["stack"], f"{f}: stack {s['stack']}")
    # the total is the sum of all sites (stdio's buffer included), exact
    tot = r["total"]
    check(tot["bytes"] == sum(s["bytes"] for s in r["sites"]), f"{view}: total != sum of sites")
    check(tot["bytes_lo"] == tot["bytes"] == tot["bytes_hi"], f"{view}: total interval not collapsed")
    shares = sum(s["share"] for s in r["sites"])
    check(abs(shares - 1) < 1e-9, f"{view}: shares sum to {shares}")
line = json.load(open(d + "/line.json"))
names = {s["name"] for s in line["sites"]}
for f, t in truth.items():
    want = [n for n in names if n.startswith(f + " ") and n.endswith(f"rpt_sites.c:{t['line']}")]
    check(want, f"--by line: no site for {f} at line {t['line']} in {sorted(names)}")
stack = json.load(open(d + "/stack.json"))
check(any(s["name"].endswith(";main;make_nodes") or s["name"] == "main;make_nodes"
          or s["name"].endswith("main;make_nodes") for s in stack["sites"]),
      f"--by stack: {[s['name'] for s in stack['sites']]}")
focus = json.load(open(d + "/focus.json"))
check(sorted(s["function"] for s in focus["sites"]) == ["make_big", "make_nodes"],
      f"--focus: {[s['function'] for s in focus['sites']]}")
check(focus["total"]["bytes"] == truth["make_big"]["alloc"][0] + truth["make_nodes"]["alloc"][0],
      "--focus total")
size = json.load(open(d + "/size.json"))
# (stdio's 4096-byte buffer matches the size range too)
check([s["function"] for s in size["sites"] if s["function"].startswith("make_")]
      == ["make_buffers"], f"--size: {size['sites']}")
# --sizes: at rate 1 the size histogram counts every allocation once
sz = json.load(open(d + "/sizes.json"))
hist = sz.get("distributions", {}).get("alloc_size", {})
check(hist.get("count") == sz["total"]["objects"], f"--sizes count {hist} vs {sz['total']}")
check(hist.get("min") == 24 and hist.get("max") == 1 << 20, f"--sizes range {hist}")
check(hist.get("quantiles", {}).get("0.5") == 48, f"--sizes median {hist}")
if errors:
    print("\n".join(errors))
    sys.exit(1)
EOF

# Demangling also from ELF symbols alone: a copy without DWARF (the
# C++ and Rust legacy names of rpt_sites' two mangled sites)
if command -v objcopy >/dev/null; then
	cp "$PROG" "$TMP/stripped"
	objcopy --strip-debug "$TMP/stripped"
	LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="rate=1,output=$TMP/stripped.pb.gz" "$TMP/stripped"
	"$CLI" report --alloc --json --top 0 "$TMP/stripped.pb.gz" > "$TMP/stripped.json"
	for f in 'ns::Parser::node' 'server::cache::insert' make_nodes; do
		grep -q "\"function\":\"$f\",\"file\":\"\"" "$TMP/stripped.json" ||
			fail "stripped copy: no $f: $(cat "$TMP/stripped.json")"
	done
fi

# the table names the sites with file:line and ends with the total line
"$CLI" report --alloc "$prof" > "$TMP/table.txt"
grep -q "make_nodes  .*rpt_sites.c:$(awk '$1=="make_nodes"{print $6}' "$TMP/truth.txt")" "$TMP/table.txt" ||
	fail "table: $(cat "$TMP/table.txt")"
grep -q " total$" "$TMP/table.txt" || fail "table has no total line"
"$CLI" report --alloc --sizes "$prof" | grep -q '^alloc_size: ' || fail "--sizes: no size table"
echo "report golden: ok"
