#!/usr/bin/env bash
# allocprof diff end to end: exact changes at rate 1 (sites in one profile
# only, sorting by |change|, totals, --by, --top, --significant, text and
# JSON agree), sampled profiles (no change against itself; a site with 2x
# the bytes and hundreds of samples is significant; few-sample sites use the
# combined method), and bad input / usage errors with one-line messages.
# The false-alarm rate over many independent runs is tests/stats/diff_*.
set -euo pipefail
cli="$AP_BINDIR/allocprof"
mk="$AP_PROGDIR/view_mkprof"
command -v python3 > /dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
EXPECT_DIR=$tmp
# shellcheck source=cli_expect.sh
. "$(dirname "$0")/cli_expect.sh"

# Rate 1: every allocation recorded, so estimates are the truth.
printf '100 10 10 main;a\n50 4 4 main;b\n10 1 1 main;c\n' | "$mk" 1 "$tmp/b1.pb" > /dev/null
printf '100 10 10 main;a\n50 8 8 main;b\n30 2 2 main;d\n' | "$mk" 1 "$tmp/n1.pb" > /dev/null
"$cli" diff --alloc --json "$tmp/b1.pb" "$tmp/n1.pb" > "$tmp/exact.json" ||
  fail "diff --json exited $?"
python3 - "$tmp/exact.json" <<'EOF' || fail "exact diff JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["view"] == "alloc" and d["by"] == "function" and d["level"] == 0.95, d
names = [s["function"] for s in d["sites"]]
assert names == ["b", "d", "c", "a"], names           # by |change|, then name
want = {"b": (200, 200, 400), "d": (60, 0, 60), "c": (-10, 10, 0), "a": (0, 1000, 1000)}
for s in d["sites"]:
    ch, b, n = want[s["function"]]
    assert s["change"] == ch and s["change_lo"] == ch and s["change_hi"] == ch, s
    assert s["base"]["bytes"] == b and s["new"]["bytes"] == n, s
    assert s["method"] == "exact", s
    assert s["significant"] == (ch != 0), s
    assert s["stack"] == [s["function"], "main"], s
assert d["sites"][0]["relative"] == 1.0                  # b: +200 on 200
assert d["sites"][1]["relative"] is None                 # d: new site
t = d["total"]
assert (t["base"]["bytes"], t["new"]["bytes"], t["change"]) == (1210, 1460, 250), t
assert t["significant"] and t["method"] == "exact", t
EOF
# The text table says the same: three '*' rows, a total row, a summary.
"$cli" diff --alloc "$tmp/b1.pb" "$tmp/n1.pb" > "$tmp/exact.txt"
[ "$(grep -c '^\*' "$tmp/exact.txt")" = 4 ] || fail "want 3 sites + total marked: $(cat "$tmp/exact.txt")"
grep -Eq '^\* +\+200 B .* b$' "$tmp/exact.txt" || fail "row for b"
grep -Eq '^\* +-10 B .* c$' "$tmp/exact.txt" || fail "row for c"
grep -Eq '^\* +\+250 B .* total$' "$tmp/exact.txt" || fail "total row"
grep -q '^4 sites, 3 with a significant change$' "$tmp/exact.txt" || fail "summary line"
# --top and --significant select rows; the total always stays.
"$cli" diff --alloc --top 1 "$tmp/b1.pb" "$tmp/n1.pb" | grep -Eq '\(1 shown\)' || fail "--top"
"$cli" diff --alloc --json --significant "$tmp/b1.pb" "$tmp/n1.pb" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert [s["function"] for s in d["sites"]] == ["b","d","c"], d' ||
  fail "--significant"
# --by stack keys sites by whole stacks.
"$cli" diff --alloc --by stack --json "$tmp/b1.pb" "$tmp/n1.pb" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["by"]=="stack" and d["sites"][0]["name"]=="main;b", d' ||
  fail "--by stack"
# The inuse view is the default.
"$cli" diff --json "$tmp/b1.pb" "$tmp/n1.pb" |
  python3 -c 'import json,sys; assert json.load(sys.stdin)["view"]=="inuse"' || fail "default view"

# Sampled profiles (R = 65536). big: 1 MiB objects, 300 vs 600 samples;
# same: identical; few: a handful of samples on each side.
cat > "$tmp/base.desc" <<'EOF'
1048576 300 300 main;big
65536 400 400 main;same
64 3 3 main;few
EOF
cat > "$tmp/new.desc" <<'EOF'
1048576 600 600 main;big
65536 400 400 main;same
64 4 4 main;few
EOF
"$mk" 65536 "$tmp/bs.pb" < "$tmp/base.desc" > /dev/null
"$mk" 65536 "$tmp/ns.pb" < "$tmp/new.desc" > /dev/null
"$cli" diff --alloc --json "$tmp/bs.pb" "$tmp/ns.pb" > "$tmp/s.json"
python3 - "$tmp/s.json" <<'EOF' || fail "sampled diff JSON"
import json, sys
d = json.load(open(sys.argv[1]))
s = {x["function"]: x for x in d["sites"]}
big, same, few = s["big"], s["same"], s["few"]
# 1 MiB objects at R = 64 KiB are sampled with pi ~ 1 - e^-16: the change
# is ~300 MiB with a tiny variance: significant. Near-certain objects carry
# too little uncertainty for the normal regime (var < 100 R^2): the split
# model's exact test.
assert big["significant"] and big["method"] == "split", big
assert big["p"] < 1e-6 and big["q"] <= 0.05, big
assert big["change_lo"] > 0 and abs(big["change"] - 300 * 1048576) < 0.01 * 300 * 1048576, big
assert not same["significant"] and same["change"] == 0, same
assert same["change_lo"] < 0 < same["change_hi"], same
# Small objects on both sides: the exact conditional (binomial) test.
assert few["method"] == "conditional" and not few["significant"], few
assert few["p"] > 0.5 and few["q"] >= few["p"], few
# Each side's own interval is reported at the full level and covers its estimate.
for x in (big, same, few):
    for side in ("base", "new"):
        v = x[side]
        assert v["bytes_lo"] <= v["bytes"] <= v["bytes_hi"], (x["function"], v)
assert d["total"]["significant"], d["total"]
EOF
# A profile against itself: nothing significant, every change 0.
"$cli" diff --alloc --json "$tmp/bs.pb" "$tmp/bs.pb" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert not any(s["significant"] for s in d["sites"]+[d["total"]]), d' ||
  fail "self-diff flagged a change"
# A site absent from BASE with few samples in NEW is not called significant:
# "no sample" bounds the base only by ~R ln(2/(1-sqrt(L))) bytes.
printf '64 1 1 main;x\n' | "$mk" 65536 "$tmp/one.pb" > /dev/null
printf '64 1 1 main;x\n64 2 2 main;fresh\n' | "$mk" 65536 "$tmp/two.pb" > /dev/null
"$cli" diff --alloc --json "$tmp/one.pb" "$tmp/two.pb" |
  python3 -c '
import json,sys
d = json.load(sys.stdin)
f = [s for s in d["sites"] if s["function"] == "fresh"][0]
assert f["base"]["samples"] == 0 and f["base"]["bytes"] == 0, f
assert f["base"]["bytes_hi"] > 65536, f
assert not f["significant"] and f["change_lo"] < 0, f' || fail "one-sided site"

# diff and report agree on each side's estimate and interval.
if "$cli" report --help > /dev/null 2>&1; then
  "$cli" report --alloc --json --top 0 "$tmp/bs.pb" > "$tmp/r.json"
  python3 - "$tmp/r.json" "$tmp/s.json" <<'EOF' || fail "diff's BASE side differs from report"
import json, sys
r = {x["function"]: x for x in json.load(open(sys.argv[1]))["sites"]}
d = {x["function"]: x for x in json.load(open(sys.argv[2]))["sites"]}
for name, site in r.items():
    b = d[name]["base"]
    for k in ("bytes", "bytes_lo", "bytes_hi", "samples"):
        assert abs(b[k] - site[k]) <= 1, (name, k, b[k], site[k])
EOF
fi

# Profiles without allocprof's sample data (Go's four types): diff works
# and says its intervals are approximate.
printf '1048576 300 300 main;big\n64 3 3 main;few\n' | "$mk" --go 65536 "$tmp/go.pb" > /dev/null
"$cli" diff --alloc "$tmp/go.pb" "$tmp/go.pb" > "$tmp/go.txt" || fail "diff of Go-style profiles exited $?"
grep -q 'intervals are approximate' "$tmp/go.txt" || fail "no approximate note: $(cat "$tmp/go.txt")"
"$cli" diff --alloc --json "$tmp/go.pb" "$tmp/go.pb" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["base"]["approximate"] and not any(s["significant"] for s in d["sites"]), d' ||
  fail "Go-style JSON"

# Bad input: exit 2, one line; usage: exit 1, one line.
head -c 50 "$tmp/bs.pb" > "$tmp/trunc.pb"
printf 'nope' > "$tmp/garbage.pb"
for pair in "$tmp/trunc.pb $tmp/ns.pb" "$tmp/bs.pb $tmp/garbage.pb" "$tmp/missing.pb $tmp/ns.pb"; do
  # shellcheck disable=SC2086
  expect_status 2 "$cli" diff $pair
done
for args in "" "$tmp/bs.pb" "$tmp/bs.pb $tmp/ns.pb $tmp/ns.pb" "--by file $tmp/bs.pb $tmp/ns.pb" \
            "--level 0 $tmp/bs.pb $tmp/ns.pb" "--top -1 $tmp/bs.pb $tmp/ns.pb" "--what $tmp/bs.pb $tmp/ns.pb" \
            "- -"; do
  # shellcheck disable=SC2086
  expect_status 1 "$cli" diff $args
done
# One side may come from standard input.
"$cli" diff --alloc --json - "$tmp/n1.pb" < "$tmp/b1.pb" |
  python3 -c 'import json,sys; assert json.load(sys.stdin)["total"]["change"] == 250' ||
  fail "BASE from standard input"
"$cli" diff --help | grep -q 'Benjamini-Hochberg' || fail "--help does not explain the method"

# q-values: printed in the table, --fdr checked and used.
"$cli" diff --alloc "$tmp/bs.pb" "$tmp/ns.pb" | grep -q ' q  *samples' ||
  fail "the table has no q column"
rc=0; "$cli" diff --alloc --fdr 0 "$tmp/bs.pb" "$tmp/ns.pb" 2> "$tmp/err" || rc=$?
[ $rc -eq 1 ] && grep -q -- '--fdr wants' "$tmp/err" || fail "--fdr 0 accepted"
"$cli" diff --alloc --json --fdr 0.2 "$tmp/bs.pb" "$tmp/ns.pb" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["fdr"] == 0.2 and d["total"]["q"] is None, d' ||
  fail "--fdr not in the JSON"

# Several runs per side: Welch on the per-run means, with degrees of
# freedom. BASE runs of "same" differ by up to 8%, NEW runs are ~50%
# larger: a change far outside the between-run spread.
for k in 390 400 420; do
  printf '65536 %s %s main;same\n64 3 3 main;few\n' $k $k | "$mk" 65536 "$tmp/rb$k.pb" > /dev/null
done
for k in 590 600 610; do
  printf '65536 %s %s main;same\n64 3 3 main;few\n' $k $k | "$mk" 65536 "$tmp/rn$k.pb" > /dev/null
done
"$cli" diff --alloc --json --base-runs 3 "$tmp/rb390.pb" "$tmp/rb400.pb" \
  "$tmp/rb420.pb" "$tmp/rn590.pb" "$tmp/rn600.pb" "$tmp/rn610.pb" > "$tmp/w.json" ||
  fail "--base-runs 3 failed"
python3 - "$tmp/w.json" <<'EOF' || fail "replicated diff JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["base"]) == 3 and len(d["new"]) == 3, d
s = {x["function"]: x for x in d["sites"]}
same, few = s["same"], s["few"]
assert same["method"] == "welch" and same["df"] > 1, same
assert same["significant"] and same["q"] <= 0.05, same
# the change of the per-run means, which each side shows
assert abs(same["change"] - (same["new"]["bytes"] - same["base"]["bytes"])) <= 2, same
assert same["change_lo"] > 0, same
assert not few["significant"], few
EOF
rc=0; "$cli" diff --alloc --base-runs 3 "$tmp/rb390.pb" "$tmp/rb400.pb" "$tmp/rb420.pb" 2> "$tmp/err" || rc=$?
[ $rc -eq 1 ] && grep -q 'wants at least 4' "$tmp/err" || fail "--base-runs without NEW runs"
echo "diff cli: ok"
