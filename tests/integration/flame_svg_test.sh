#!/usr/bin/env bash
# allocprof flame: the SVG is well-formed XML (xmllint), self-contained,
# carries the expected frames with tooltips (bytes, interval, samples),
# escapes hostile names and titles, has the interactive script in CDATA,
# is deterministic, and bad input exits 2 with one line (usage errors 1).
set -euo pipefail
cli="$AP_BINDIR/allocprof"
mk="$AP_PROGDIR/view_mkprof"
command -v xmllint > /dev/null || { echo "SKIP: xmllint not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
EXPECT_DIR=$tmp
# shellcheck source=cli_expect.sh
. "$(dirname "$0")/cli_expect.sh"

cat > "$tmp/desc" <<'EOF'
64 10 4 main;parse;xmalloc
1048576 20 20 main;load_cache;buffer_new
4096 5 0 main;parse;tokenize
300 4 4 main;evil\x3cscript\x3e\x26\x22q\x22\x27;bad\xffutf8\x01ctl
100 3 3 main;Cache\x3cint\x3e::put;operator new[]\x28unsigned long\x29
EOF
"$mk" 524288 "$tmp/p.pb" < "$tmp/desc" > /dev/null

"$cli" flame --alloc --title 'Title <&> "q" '"'s'" "$tmp/p.pb" > "$tmp/a.svg" 2> "$tmp/err" ||
  fail "flame exited $?: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "flame wrote to stderr: $(cat "$tmp/err")"
xmllint --noout "$tmp/a.svg" || fail "alloc SVG is not well-formed"
head -c 5 "$tmp/a.svg" | grep -q '<?xml' || fail "no XML declaration"
grep -q '<svg xmlns="http://www.w3.org/2000/svg"' "$tmp/a.svg" || fail "no SVG root"

# Expected frames (data-n carries the full name).
for f in all main parse xmalloc load_cache buffer_new tokenize; do
  grep -q "data-n=\"$f\"" "$tmp/a.svg" || fail "frame $f missing"
done
# Hostile names are escaped, never raw; invalid bytes become U+FFFD.
grep -q 'data-n="evil&lt;script&gt;&amp;&quot;q&quot;&apos;"' "$tmp/a.svg" ||
  fail "hostile name not escaped as expected"
! grep -q '<script>&' "$tmp/a.svg" || fail "raw hostile name in the SVG"
grep -q "data-n=\"bad$(printf '\xef\xbf\xbd')utf8$(printf '\xef\xbf\xbd')ctl\"" "$tmp/a.svg" ||
  fail "invalid UTF-8 / control bytes not replaced"
# (C++ names are shortened: Cache<int>::put reads Cache<>::put)
grep -q 'data-n="Cache&lt;&gt;::put"' "$tmp/a.svg" ||
  fail "C++ template name not escaped"
grep -q '<text id="title" [^>]*>Title &lt;&amp;&gt; &quot;q&quot; &apos;s&apos;</text>' "$tmp/a.svg" ||
  fail "title not escaped"
# Script inline in CDATA, no external references.
grep -q '<script type="text/ecmascript"><!\[CDATA\[' "$tmp/a.svg" || fail "no inline script"
[ "$(grep -c ']]>' "$tmp/a.svg")" = 2 ] || fail "unexpected CDATA terminators"
! grep -Eq '(xlink:)?href="(https?:)?//' "$tmp/a.svg" || fail "external reference"
for fn in zoom search keydown; do
  grep -q "$fn" "$tmp/a.svg" || fail "script lacks $fn"
done
# Tooltip: name, bytes, share, interval, samples.
grep -Eq '<title>load_cache&#10;[0-9.]+ MiB allocated \([0-9]+ B\), [0-9.]+% of the total&#10;95% interval \[[0-9.]+ [KMG]iB, [0-9.]+ [KMG]iB\]&#10;20 samples</title>' "$tmp/a.svg" ||
  fail "load_cache tooltip: $(grep -o '<title>load_cache[^<]*' "$tmp/a.svg")"
# Frame widths: buffer_new (20 MiB-ish of ~32 MiB) wider than tokenize.
wb=$(grep -o 'data-w="[0-9.e-]*" data-b="[0-9.e+]*" data-n="buffer_new"' "$tmp/a.svg" | sed 's/data-w="\([^"]*\)".*/\1/')
wt=$(grep -o 'data-w="[0-9.e-]*" data-b="[0-9.e+]*" data-n="tokenize"' "$tmp/a.svg" | sed 's/data-w="\([^"]*\)".*/\1/')
awk -v a="$wb" -v b="$wt" 'BEGIN { exit !(a > 0.5 && a < 0.9 && b > 0 && b < a) }' ||
  fail "widths buffer_new=$wb tokenize=$wt"

# Random names over every byte but NUL (fixed seed): the SVG stays
# well-formed XML whatever the names hold, and folded lines keep the grammar.
python3 - > "$tmp/rand.desc" <<'EOF'
import random
rng = random.Random(7)
for i in range(60):
    frames = []
    for _ in range(rng.randint(1, 6)):
        name = bytes(rng.randint(1, 255) for _ in range(rng.randint(0, 12)))
        # ';' separates frames and \n ends lines in the description
        frames.append("".join("\\x%02x" % b if b in b";\n\\ " or b > 126 or b < 32 else chr(b) for b in name))
    print(rng.choice([8, 100, 5000]), rng.randint(1, 9), 1, ";".join(frames))
EOF
"$mk" 4096 "$tmp/rand.pb" < "$tmp/rand.desc" > /dev/null
"$cli" flame --alloc --width 3000 "$tmp/rand.pb" > "$tmp/rand.svg" || fail "random names: exit $?"
xmllint --noout "$tmp/rand.svg" || fail "random names broke the XML"
"$cli" folded --alloc "$tmp/rand.pb" > "$tmp/rand.folded"
if LC_ALL=C grep -Evn '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$tmp/rand.folded"; then
  fail "random names broke the folded grammar (lines above)"
fi

# inuse view: tokenize has no live bytes, so no frame; default is inuse.
"$cli" flame "$tmp/p.pb" > "$tmp/i.svg"
xmllint --noout "$tmp/i.svg" || fail "inuse SVG is not well-formed"
! grep -q 'data-n="tokenize"' "$tmp/i.svg" || fail "tokenize in the inuse graph"
grep -q 'In-use bytes' "$tmp/i.svg" || fail "default title should name the inuse view"
# Deterministic output.
"$cli" flame "$tmp/p.pb" | cmp -s - "$tmp/i.svg" || fail "output not deterministic"
# --level shows in the tooltips; --width in the root element.
"$cli" flame --level 0.8 --width 800 "$tmp/p.pb" > "$tmp/l.svg"
grep -q '80% interval' "$tmp/l.svg" || fail "--level not used in tooltips"
grep -q '<svg [^>]*width="800"' "$tmp/l.svg" || fail "--width not used"

# A Go-style profile (no sample counts): the subtitle says the tooltips'
# intervals are approximate.
printf '4096 10 10 main;work\n' | "$mk" --go 524288 "$tmp/go.pb" > /dev/null
"$cli" flame "$tmp/go.pb" > "$tmp/go.svg" || fail "Go-style profile exited $?"
xmllint --noout "$tmp/go.svg" || fail "Go-style SVG is not well-formed"
grep -q '<text id="subtitle"[^<]*intervals approximate' "$tmp/go.svg" ||
  fail "no approximate note in the subtitle"

# An empty profile still gives a valid document with the root only.
: | "$mk" 524288 "$tmp/empty.pb" > /dev/null
"$cli" flame "$tmp/empty.pb" > "$tmp/e.svg" || fail "empty profile exited $?"
xmllint --noout "$tmp/e.svg" || fail "empty SVG is not well-formed"
[ "$(grep -c '<g class="f"' "$tmp/e.svg")" = 1 ] || fail "empty graph has frames"

# Bad input: exit 2 and one line on stderr, nothing on stdout.
head -c 120 "$tmp/p.pb" > "$tmp/trunc.pb"
printf 'garbage' > "$tmp/garbage.pb"
: > "$tmp/zero.pb"
for bad in "$tmp/trunc.pb" "$tmp/garbage.pb" "$tmp/zero.pb" "$tmp/missing.pb"; do
  expect_status 2 "$cli" flame "$bad"
done
for args in "" "--width 10 $tmp/p.pb" "--level 1.5 $tmp/p.pb" "--nope $tmp/p.pb" "--title"; do
  # shellcheck disable=SC2086
  expect_status 1 "$cli" flame $args
done
"$cli" flame --help | grep -q '^usage: allocprof flame' || fail "--help"
echo "flame svg: ok"
