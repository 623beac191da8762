#!/usr/bin/env bash
# The flame graph's script really runs in a browser: headless Chromium loads
# the SVG with a small driver appended (it clicks a frame and presses
# Ctrl-F with window.prompt answered), and the DOM it dumps must show the
# zoom (the clicked frame spans the width, a frame outside its subtree is
# hidden, an ancestor is faded, "Reset zoom" shown) and the search (matched
# frames highlighted, the matched share computed over all frames, nested
# matches counted once). Skipped when Chromium is not installed.
set -euo pipefail
cli="$AP_BINDIR/allocprof"
mk="$AP_PROGDIR/view_mkprof"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "SKIP: no chromium"; exit 77; }
command -v python3 > /dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Rate 1 so the shares are exact: total 10000 B.
cat > "$tmp/desc" <<'EOF'
1000 4 4 main;serve;parse;node_new
1000 2 2 main;serve;render
1000 3 3 main;load;parse;node_new
1000 1 1 main;load;parse
EOF
"$mk" 1 "$tmp/p.pb" < "$tmp/desc" > /dev/null
"$cli" flame --width 1000 "$tmp/p.pb" > "$tmp/f.svg"

# Driver: zoom into "serve", then search /parse/: parse under serve (4000)
# and parse under load (4000, containing node_new 3000) -> 8000 of 10000;
# node_new inside a matched parse is not counted twice.
python3 - "$tmp/f.svg" "$tmp/driven.svg" <<'EOF'
import sys
svg = open(sys.argv[1]).read()
driver = """<script type="text/ecmascript"><![CDATA[
window.prompt = function () { return 'parse'; };
var gs = document.getElementById('frames').getElementsByTagName('g');
for (var i = 0; i < gs.length; i++)
  if (gs[i].getAttribute('data-n') === 'serve') {
    gs[i].dispatchEvent(new MouseEvent('click', {bubbles: true}));
    break;
  }
document.dispatchEvent(new KeyboardEvent('keydown', {key: 'f', ctrlKey: true}));
]]></script>
</svg>
"""
assert svg.endswith("</svg>\n")
open(sys.argv[2], "w").write(svg[: -len("</svg>\n")] + driver)
EOF
timeout 60 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
  --enable-logging=stderr --v=0 --dump-dom "file://$tmp/driven.svg" > "$tmp/dom.xml" 2> "$tmp/browser.log" ||
  fail "chromium exited $?: $(tail -5 "$tmp/browser.log")"
python3 - "$tmp/dom.xml" <<'EOF' || fail "DOM after zoom and search (see above)"
import re, sys
dom = open(sys.argv[1]).read()
frames = {}
for m in re.finditer(r'<g class="(f[^"]*)"([^>]*)>(.*?)</g>', dom, re.S):
    cls, attrs, body = m.groups()
    name = re.search(r'data-n="([^"]*)"', attrs).group(1)
    p = int(re.search(r'data-p="(-?\d+)"', attrs).group(1))
    rect = re.search(r'<rect ([^>]*)>', body).group(1)
    width = float(re.search(r'width="([0-9.]+)"', rect).group(1))
    fill = re.search(r'fill="([^"]*)"', rect).group(1)
    hidden = "display: none" in attrs
    frames.setdefault(name, []).append(dict(cls=cls, p=p, w=width, fill=fill, hidden=hidden))
def one(name):
    assert len(frames[name]) == 1, frames[name]
    return frames[name][0]
serve, load, main, render = one("serve"), one("load"), one("main"), one("render")
avail = 1000 - 2 * 10
assert abs(serve["w"] - avail) < 0.5, ("zoomed frame must span the width", serve)
assert not serve["hidden"] and serve["cls"] == "f", serve
assert abs(render["w"] - avail / 3) < 0.5, ("render is 2000 of serve's 6000", render)
assert load["hidden"], ("outside the zoomed subtree", load)
assert main["cls"] == "f anc" and not main["hidden"], ("ancestor faded", main)
hl = "rgb(220,60,230)"
assert all(f["fill"] == hl for f in frames["parse"]), frames["parse"]
assert render["fill"] != hl, render
m = re.search(r'<text id="matched"[^>]*>([^<]*)<', dom)
assert m and m.group(1) == "Matched: 80.00% (7.81 KiB)", m and m.group(1)
u = re.search(r'<text id="unzoom"[^>]*>', dom).group(0)
assert "display: none" not in u, u
s = re.search(r'<text id="search"[^>]*>([^<]*)<', dom).group(1)
assert s == "Clear search", s
EOF
if grep -q 'Uncaught' "$tmp/browser.log"; then
  fail "script error: $(grep 'Uncaught' "$tmp/browser.log")"
fi
echo "flame in a browser: ok"
