#!/usr/bin/env bash
# AP_TEST_PRELOAD: diff, flame and folded on profiles the real runtime wrote
# for tests/integration/progs/view_sites.c (allocprof run). At rate 1 the
# numbers are exact: folded weights equal the bytes each site allocated, the
# flame graph names every site, and diff finds exactly the one site that
# changed. At rate 4096 a 20x larger site is flagged while sites whose
# allocations are all near-certainly sampled show no change.
set -euo pipefail
cli="$AP_BINDIR/allocprof"
prog="$AP_PROGDIR/view_sites"
[ -e "$AP_BINDIR/liballocprof_preload.so" ] || { echo "SKIP: no runtime built"; exit 77; }
command -v python3 > /dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

run() { # rate seed scale out
  "$cli" run -q -r "$1" -e seed="$2" -o "$4" -- "$prog" "$3" ||
    fail "allocprof run $prog $3 exited $?"
  [ -s "$4" ] || fail "no profile written to $4"
}
run 1 1 1 "$tmp/base.pb.gz"
run 1 2 2 "$tmp/new.pb.gz"

# Folded, alloc view, rate 1: the exact bytes of each site, one line each.
# keep_nodes: 1000 x 64 B nodes + their 8000 B pointer array.
"$cli" folded --alloc "$tmp/base.pb.gz" > "$tmp/base.folded"
for want in 'main;keep_nodes 72000' 'main;churn_buffers 16777216' 'main;keep_table 25600'; do
  grep -q ";$want\$" "$tmp/base.folded" || fail "no line ending ';$want': $(cat "$tmp/base.folded")"
done
LC_ALL=C grep -Evq '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$tmp/base.folded" &&
  fail "a folded line breaks the grammar"
# inuse view: the churned buffers are gone.
"$cli" folded "$tmp/base.pb.gz" > "$tmp/inuse.folded"
! grep -q 'churn_buffers' "$tmp/inuse.folded" || fail "freed buffers in the inuse view"
grep -q ';main;keep_nodes 72000$' "$tmp/inuse.folded" || fail "live nodes missing"

# Flame graph of the real profile: valid XML naming every site.
"$cli" flame --alloc "$tmp/base.pb.gz" > "$tmp/base.svg"
if command -v xmllint > /dev/null; then
  xmllint --noout "$tmp/base.svg" || fail "SVG not well-formed"
fi
for f in main keep_nodes churn_buffers keep_table; do
  grep -q "data-n=\"$f\"" "$tmp/base.svg" || fail "flame lacks $f"
done
grep -q '<title>keep_nodes&#10;70.31 KiB allocated (72000 B)' "$tmp/base.svg" ||
  fail "keep_nodes tooltip: $(grep -o '<title>keep_nodes[^<]*' "$tmp/base.svg")"

# diff at rate 1: keep_nodes doubled (+72000 B), nothing else changed.
"$cli" diff --alloc --json "$tmp/base.pb.gz" "$tmp/new.pb.gz" > "$tmp/d1.json"
python3 - "$tmp/d1.json" <<'EOF' || fail "rate-1 diff"
import json, sys
d = json.load(open(sys.argv[1]))
s = {x["function"]: x for x in d["sites"]}
k = s["keep_nodes"]
assert k["change"] == 72000 and k["significant"] and k["method"] == "exact", k
for name in ("churn_buffers", "keep_table"):
    assert s[name]["change"] == 0 and not s[name]["significant"], s[name]
assert d["sites"][0]["function"] == "keep_nodes", d["sites"][0]
assert d["total"]["change"] == 72000, d["total"]
EOF

# Sampled (R = 4096): keep_nodes x20 is flagged; 1 MiB buffers and the
# 25 KB table are sampled with probability ~1 on both sides: no change.
run 4096 11 1 "$tmp/sb.pb.gz"
run 4096 12 20 "$tmp/sn.pb.gz"
"$cli" diff --alloc --json "$tmp/sb.pb.gz" "$tmp/sn.pb.gz" > "$tmp/d2.json"
python3 - "$tmp/d2.json" <<'EOF' || fail "sampled diff"
import json, sys
d = json.load(open(sys.argv[1]))
s = {x["function"]: x for x in d["sites"]}
k = s["keep_nodes"]
truth = 20 * 72000 - 72000
assert k["significant"] and k["change_lo"] > 0, k
# ~350 samples on the new side: the estimate is within a few % of the
# truth; 50% is many standard errors away (not a coverage test, which is
# tests/stats/diff_null_test.c's job).
assert 0.5 * truth < k["change"] < 1.5 * truth, (truth, k)
c = s["churn_buffers"]
assert not c["significant"] and abs(c["change"]) < 1e-6 * 16777216, c
EOF
echo "diff/flame/folded on real profiles: ok"
