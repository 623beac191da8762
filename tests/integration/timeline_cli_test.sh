#!/usr/bin/env bash
# allocprof leaks and timeline on a series of dumps with known values
# (view_mkprof at rate 1: every estimate is the truth): the verdicts and
# their JSON, every output format of timeline (SVG well-formed under
# xmllint, JSON, text, PNG through rsvg-convert, -o FILE), and one clear
# line and the right exit status for each bad input (no files, a single
# point, several processes without --pid, times going backwards, --png
# without rsvg-convert).
set -euo pipefail
cli="$AP_BINDIR/allocprof"
mk="$AP_PROGDIR/view_mkprof"
command -v xmllint > /dev/null || { echo "SKIP: xmllint not installed"; exit 77; }
command -v python3 > /dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# dump DIR PID SEQ T_S GROW_SAMPLES: a dump of process PID at T_S seconds
# after its start; "grow" holds GROW_SAMPLES blocks of 4 KiB (a leak when
# it rises), "flat" 4 blocks of 1000 B, and a site with a hostile name.
dump() {
	mkdir -p "$1"
	printf '@time %d\n@comment allocprof.process=pid=%d;start=1000000000;boot=b-1;seq=%d\n4096 %d %d main;grow\n1000 4 4 main;flat\n64 2 2 main;<evil>&"x\n' \
		$((1000000000 + $4 * 1000000000)) "$2" "$3" "$5" "$5" |
		"$mk" 1 "$1/p.$2.$3.pb" > /dev/null
}
for k in 1 2 3 4 5 6; do dump "$tmp/a" 100 "$k" "$k" $((10 * k)); done

# expect_error STATUS TEXT CMD...: one line on stderr containing TEXT.
expect_error() {
	local want=$1 text=$2 rc=0
	shift 2
	"$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
	[ "$rc" = "$want" ] || fail "$*: exit $rc, want $want ($(cat "$tmp/err"))"
	[ "$(wc -l < "$tmp/err")" = 1 ] || fail "$*: not one line: $(cat "$tmp/err")"
	grep -qF -- "$text" "$tmp/err" || fail "$*: '$(cat "$tmp/err")' lacks '$text'"
}

# leaks: grow rises 40960 B per second exactly; flat and the hostile one
# do not move.
"$cli" leaks "$tmp/a" > "$tmp/leaks.txt"
grep -q '^LEAK .*+141 MiB/h \[141, 141\] .* grow$' "$tmp/leaks.txt" ||
	fail "leak not in the table: $(cat "$tmp/leaks.txt")"
grep -q '1 of 3 sites flagged at FDR 0.05' "$tmp/leaks.txt" || fail "summary: $(cat "$tmp/leaks.txt")"
"$cli" leaks --json "$tmp/a" > "$tmp/leaks.json"
python3 - "$tmp/leaks.json" <<'EOF' || fail "leaks --json (above)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["process"]["pid"] == 100 and d["points"] == 6 and d["fdr"] == 0.05, d
sites = {s["function"]: s for s in d["sites"]}
assert set(sites) == {"grow", "flat", '<evil>&"x'}, sites
g = sites["grow"]
assert g["leak"] is True and g["rate"] == 40960 and g["rate_lo"] == 40960 == g["rate_hi"], g
assert g["q"] < 0.05, g
for name in ("flat", '<evil>&"x'):
    s = sites[name]
    assert s["leak"] is False and s["rate"] == 0 and s["q"] == 1, s
for s in d["sites"]:
    for k in ("function", "leak", "rate", "rate_lo", "rate_hi", "q"):
        assert k in s, (k, s)
EOF
"$cli" leaks --top 1 "$tmp/a" | grep -q '(2 more sites; --top 0 shows all)' || fail "--top 1"

# timeline: every format
"$cli" timeline "$tmp/a" > "$tmp/t.svg"
xmllint --noout "$tmp/t.svg" || fail "SVG not well-formed"
grep -q '<g id="peak" data-i="5" data-t="6"' "$tmp/t.svg" || fail "peak not at the last point"
grep -q 'data-leak="1" data-n="grow"' "$tmp/t.svg" || fail "leak not marked"
grep -q 'data-n="&lt;evil&gt;&amp;&quot;x"' "$tmp/t.svg" || fail "hostile name not escaped"
"$cli" timeline --top 1 --title 'A <title>' -o "$tmp/o.svg" "$tmp/a" > "$tmp/stdout"
[ ! -s "$tmp/stdout" ] || fail "-o FILE also wrote to stdout"
xmllint --noout "$tmp/o.svg" || fail "-o SVG not well-formed"
grep -q 'A &lt;title&gt;' "$tmp/o.svg" && grep -q 'other (2 sites)' "$tmp/o.svg" ||
	fail "--title/--top not applied"
"$cli" timeline --json "$tmp/a" > "$tmp/t.json"
python3 - "$tmp/t.json" <<'EOF' || fail "timeline --json (above)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["times"] == [1, 2, 3, 4, 5, 6], d["times"]
assert d["peak"]["index"] == 5 and d["peak"]["t"] == 6, d["peak"]
grow = [s for s in d["sites"] if s["function"] == "grow"][0]
assert grow["leak"] is True
assert [v["bytes"] for v in grow["values"]] == [40960 * k for k in range(1, 7)], grow
total = [v["bytes"] for v in d["total"]]
assert total == [40960 * k + 4000 + 128 for k in range(1, 7)], total
EOF
"$cli" timeline --text "$tmp/a" > "$tmp/t.txt"
grep -q '^#1  grow  LEAK +141 MiB/h' "$tmp/t.txt" && grep -q '^Peak: 244 KiB .* at 6.0 s (point 6 of 6)' "$tmp/t.txt" ||
	fail "text table: $(cat "$tmp/t.txt")"
if command -v rsvg-convert > /dev/null; then
	"$cli" timeline --png -o "$tmp/t.png" "$tmp/a"
	head -c 8 "$tmp/t.png" | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a' || fail "not a PNG"
	"$cli" timeline --png "$tmp/a" > "$tmp/t2.png"
	cmp -s "$tmp/t.png" "$tmp/t2.png" || fail "PNG on stdout differs from -o"
fi
expect_error 2 "needs rsvg-convert" env PATH=/nonexistent "$cli" timeline --png -o "$tmp/x.png" "$tmp/a"
[ ! -e "$tmp/x.png" ] || fail "a PNG file was left without rsvg-convert"

# bad input: one line each, usage errors exit 1, input errors 2
expect_error 1 "no profile given" "$cli" leaks
expect_error 1 "no profile given" "$cli" timeline
mkdir "$tmp/empty"
expect_error 1 "no heap profile given" "$cli" leaks "$tmp/empty"
expect_error 2 "only one dump" "$cli" leaks "$tmp/a/p.100.3.pb"
expect_error 1 "not standard input" "$cli" leaks - < "$tmp/a/p.100.3.pb"
expect_error 2 "only one dump" "$cli" timeline "$tmp/a/p.100.3.pb"
for k in 1 2 3; do dump "$tmp/b" 200 "$k" "$k" 5; done
expect_error 1 "dumps of 2 processes (pids 100, 200): a series is one process; choose one with --pid" \
	"$cli" leaks "$tmp/a" "$tmp/b"
"$cli" leaks --json --pid 200 "$tmp/a" "$tmp/b" | grep -q '"pid":200' || fail "--pid 200"
expect_error 1 "no dump of pid 300" "$cli" leaks --pid 300 "$tmp/a" "$tmp/b"
dump "$tmp/c" 100 1 1 10
dump "$tmp/c" 100 2 3 20
dump "$tmp/c" 100 3 2 30
expect_error 2 "times are not increasing" "$cli" leaks "$tmp/c"
expect_error 2 "times are not increasing" "$cli" timeline --json "$tmp/c"
expect_error 1 "--fdr wants" "$cli" leaks --fdr 2 "$tmp/a"
expect_error 1 "--by must be" "$cli" timeline --by file "$tmp/a"
echo "leaks and timeline: ok"
