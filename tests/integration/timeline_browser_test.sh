#!/usr/bin/env bash
# The timeline's SVG in a real browser: headless Chromium loads it with a
# small driver appended that moves the pointer onto the "burst" area at
# the peak; the DOM it dumps must show the peak marker at the right time
# and value, the hovered area outlined, and the hover box and details
# line with the time, the site, its estimate and interval and the total.
# A screenshot of the same page is taken (TIMELINE_SHOTS=DIR keeps it for
# a person to look at). Chromium is installed with apt-get when missing
# and running as root; otherwise the test is skipped.
set -euo pipefail
cli="$AP_BINDIR/allocprof"
mk="$AP_PROGDIR/view_mkprof"
command -v python3 > /dev/null || { echo "SKIP: python3 not installed"; exit 77; }
find_browser() { command -v chromium || command -v chromium-browser || command -v google-chrome || true; }
browser=$(find_browser)
if [ -z "$browser" ] && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
	echo "installing chromium" >&2
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } > /dev/null 2>&1 || true
	browser=$(find_browser)
fi
[ -n "$browser" ] || { echo "SKIP: no chromium (and it could not be installed)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Six dumps at t = 1..6 s, rate 1 (exact): "grow" leaks 10 blocks of
# 4 KiB a second, "burst" holds 1, 4, 100, 4, 1, 1 blocks of 4 KiB (the
# peak is at t = 3 s: 30 + 100 blocks + 4000 B = 536480 B), "flat" 4000 B.
burst=(1 4 100 4 1 1)
for k in 1 2 3 4 5 6; do
	b=${burst[$((k - 1))]}
	printf '@time %d\n@comment allocprof.process=pid=77;start=1000000000;boot=b;seq=%d\n4096 %d %d main;grow\n4096 %d %d main;burst\n1000 4 4 main;flat\n' \
		$((1000000000 + k * 1000000000)) "$k" $((10 * k)) $((10 * k)) "$b" "$b" |
		"$mk" 1 "$tmp/p.$k.pb" > /dev/null
done
"$cli" timeline --width 1200 --height 640 "$tmp" > "$tmp/t.svg"

python3 - "$tmp/t.svg" "$tmp/driven.svg" <<'EOF'
import sys
svg = open(sys.argv[1]).read()
driver = """<script type="text/ecmascript"><![CDATA[
(function () {
var plot = document.getElementById('plot'), peak = document.getElementById('peak');
var i = +peak.getAttribute('data-i'), t = +peak.getAttribute('data-t');
function n(a) { return +plot.getAttribute(a); }
var areas = plot.getElementsByClassName('area'), below = 0, mine = 0;
for (var k = 0; k < areas.length; k++) {
  var b = +areas[k].getAttribute('data-b').split(',')[i];
  if (areas[k].getAttribute('data-n') === 'burst') { mine = b; break; }
  below += b;
}
var x = n('data-x0') + (t - n('data-tmin')) / (n('data-tmax') - n('data-tmin')) * (n('data-x1') - n('data-x0'));
var y = n('data-y1') - (below + mine / 2) / n('data-ytop') * (n('data-y1') - n('data-y0'));
var svg = document.documentElement, p = svg.createSVGPoint();
p.x = x; p.y = y;
p = p.matrixTransform(svg.getScreenCTM());
plot.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: p.x, clientY: p.y}));
})();
]]></script>
</svg>
"""
assert svg.endswith("</svg>\n")
open(sys.argv[2], "w").write(svg[: -len("</svg>\n")] + driver)
EOF
run_browser() { # OUT-FLAGS...: one headless run over the driven SVG
	rm -rf "$tmp/profile"
	timeout 90 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$tmp/profile" --window-size=1200,640 \
		--enable-logging=stderr --v=0 "$@" "file://$tmp/driven.svg"
}
run_browser --dump-dom > "$tmp/dom.xml" 2> "$tmp/browser.log" ||
	fail "chromium exited $?: $(tail -5 "$tmp/browser.log")"
if grep -q 'Uncaught' "$tmp/browser.log"; then
	fail "script error: $(grep 'Uncaught' "$tmp/browser.log")"
fi
python3 - "$tmp/dom.xml" <<'EOF' || fail "DOM after the hover (above)"
import re, sys
dom = open(sys.argv[1]).read()
peak = re.search(r'<g id="peak" data-i="(\d+)" data-t="([^"]*)" data-b="(\d+)"', dom)
assert peak and peak.groups() == ("2", "3", "536480"), peak and peak.groups()
label = re.search(r'<g id="peak".*?<text[^>]*>([^<]*)</text>', dom, re.S).group(1)
assert label == "peak 523.91 KiB at 3.0 s [523.91 KiB, 523.91 KiB]", label
tip = re.search(r'<g id="tip"([^>]*)>(.*?)</g>', dom, re.S)
assert tip and "display: none" not in tip.group(1), ("hover box hidden", tip and tip.group(1))
lines = re.findall(r'<tspan[^>]*>([^<]*)</tspan>', tip.group(2))
assert lines == ["t = 3.00 s (point 3 of 6)", "burst",
                 "  400.00 KiB, 95% interval [400.00 KiB, 400.00 KiB]",
                 "total 523.91 KiB [523.91 KiB, 523.91 KiB]"], lines
details = re.search(r'<text id="details"[^>]*>([^<]*)<', dom).group(1)
assert details.startswith("t = 3.00 s (point 3 of 6)  |  burst  |"), details
hot = re.findall(r'<path class="area hot"[^>]*data-n="([^"]*)"', dom)
assert hot == ["burst"], hot
guide = re.search(r'<line id="guide"([^>]*)>', dom).group(1)
assert "display: none" not in guide, guide
assert 'data-leak="1" data-n="grow"' in dom, "the leak is not marked"
EOF
run_browser --screenshot="$tmp/shot.png" > /dev/null 2>> "$tmp/browser.log" ||
	fail "chromium screenshot failed: $(tail -5 "$tmp/browser.log")"
[ "$(stat -c %s "$tmp/shot.png")" -gt 10000 ] || fail "screenshot missing or empty"
head -c 8 "$tmp/shot.png" | od -An -tx1 | grep -q '89 50 4e 47' || fail "screenshot is not a PNG"
if [ -n "${TIMELINE_SHOTS:-}" ]; then
	mkdir -p "$TIMELINE_SHOTS"
	cp "$tmp/shot.png" "$TIMELINE_SHOTS/timeline_hover.png"
	cp "$tmp/driven.svg" "$TIMELINE_SHOTS/timeline_hover.svg"
fi
echo "timeline in a browser: ok"
