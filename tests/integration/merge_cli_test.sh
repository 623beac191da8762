#!/usr/bin/env bash
# merge_cli_test.sh: `allocprof merge` adds unbiased values. Two profiles
# sampled at different rates (written by view_mkprof, an independent pprof
# writer) merge into one whose report totals are the sums of the inputs'
# totals per view, whose period is the first input's, and whose samples from
# the second input keep their rate (a "rate" label: report says the rates
# are mixed); `report A B` equals `report (merge A B)`; the output file is
# written atomically and is itself mergeable.
set -euo pipefail
: "${AP_BINDIR:?}" "${AP_PROGDIR:?}"
CLI=$AP_BINDIR/allocprof
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ap_merge.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing" >&2; exit 77; }

printf '100 5 2 main;parse\n4096 3 3 main;cache\n' |
	"$AP_PROGDIR/view_mkprof" 65536 "$TMP/a.pb" >/dev/null
printf '100 9 1 main;parse\n1048576 2 0 main;big\n' |
	"$AP_PROGDIR/view_mkprof" 524288 "$TMP/b.pb" >/dev/null
"$CLI" merge -o "$TMP/m.pb.gz" "$TMP/a.pb" "$TMP/b.pb"
"$CLI" merge -o "$TMP/mm.pb.gz" "$TMP/m.pb.gz" "$TMP/m.pb.gz"
ls "$TMP" | grep -q '\.tmp\.' && fail "temporary file left behind"
for v in alloc inuse; do
	for f in a.pb b.pb m.pb.gz mm.pb.gz; do
		"$CLI" report --$v --json --no-symbolize "$TMP/$f" > "$TMP/$f.$v.json"
	done
	"$CLI" report --$v --json --no-symbolize "$TMP/a.pb" "$TMP/b.pb" > "$TMP/both.$v.json"
done
python3 - "$TMP" <<'EOF'
import json, sys
d = sys.argv[1]
for v in ("alloc", "inuse"):
    r = {f: json.load(open(f"{d}/{f}.{v}.json")) for f in ("a.pb", "b.pb", "m.pb.gz", "mm.pb.gz", "both")}
    a, b, m, mm, both = (r[k]["total"] for k in ("a.pb", "b.pb", "m.pb.gz", "mm.pb.gz", "both"))
    assert m["bytes"] == a["bytes"] + b["bytes"], (v, m, a, b)
    assert m["objects"] == a["objects"] + b["objects"], (v, m, a, b)
    assert m["samples"] == a["samples"] + b["samples"], (v, m, a, b)
    assert mm["bytes"] == 2 * m["bytes"] and mm["samples"] == 2 * m["samples"], (v, mm, m)
    assert r["m.pb.gz"]["rate"] == 65536 and r["m.pb.gz"]["mixed_rates"], r["m.pb.gz"]
    assert not r["a.pb"]["mixed_rates"]
    # merged on load or merged first: the same report
    assert r["both"]["total"] == m and r["both"]["sites"] == r["m.pb.gz"]["sites"], v
    # intervals of the merged total contain the estimate
    assert m["bytes_lo"] <= m["bytes"] <= m["bytes_hi"], m
print("merge: ok")
EOF
