#!/usr/bin/env bash
# hist_cli_test.sh: `allocprof hist` end to end: summary and quantiles on a
# known input, Prometheus output accepted by `promtool check metrics` (skip,
# exit 77, only when promtool is absent), JSON that round-trips through the
# library's decoder form, bad tokens (exit 2, line named, nothing on stdout)
# and usage errors (exit 1).
set -u
bin=${AP_BINDIR:?}/allocprof
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# An empty file of our own: /dev/null is not always a device in sandboxes.
: > "$tmp/empty"
fail=0
check() { # check DESCRIPTION COMMAND...: run, count a failure
	local what=$1
	shift
	if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=$((fail + 1)); fi
}

# Known input 1..1000: nearest-rank p50 = 500, p90 = 900, p99 = 990;
# values below 2^11 at sigbits 10 are exact, so the quantiles are too.
seq 1 1000 > "$tmp/in"
"$bin" hist --sigbits 10 --quantiles 0.5,0.9,0.99 < "$tmp/in" > "$tmp/out"
check "summary exits 0" test $? -eq 0
check "count" grep -qx 'count   1000' "$tmp/out"
check "min" grep -qx 'min     1' "$tmp/out"
check "max" grep -qx 'max     1000' "$tmp/out"
check "mean" grep -qx 'mean    500.50' "$tmp/out"
# population sd of 1..1000 = sqrt((1000^2 - 1) / 12) = 288.6749...
check "stddev" grep -qx 'stddev  288.67' "$tmp/out"
check "p50" grep -qx 'p50     500' "$tmp/out"
check "p90" grep -qx 'p90     900' "$tmp/out"
check "p99" grep -qx 'p99     990' "$tmp/out"
check "bar chart" grep -q '512 .. 1000 .*|#*| 489' "$tmp/out"

# Several numbers a line, tabs and blank lines are all fine.
printf '5\t7  9\n\n\n 11\n' | "$bin" hist > "$tmp/out"
check "free-form whitespace" grep -qx 'count   4' "$tmp/out"

# Prometheus exposition: valid for promtool, cumulative, +Inf = count.
"$bin" hist --prometheus alloc_size_bytes < "$tmp/in" > "$tmp/prom"
check "prometheus exits 0" test $? -eq 0
check "+Inf equals count" grep -qx 'alloc_size_bytes_bucket{le="+Inf"} 1000' "$tmp/prom"
check "_sum" grep -qx 'alloc_size_bytes_sum 500500' "$tmp/prom"
check "_count" grep -qx 'alloc_size_bytes_count 1000' "$tmp/prom"
check "le = bucket max" grep -qx 'alloc_size_bytes_bucket{le="1003"} 1000' "$tmp/prom"
"$bin" hist --prometheus x --le 10,100,500 < "$tmp/in" > "$tmp/prom2"
check "user bounds" grep -qx 'x_bucket{le="500"} 500' "$tmp/prom2"
"$bin" hist --prometheus x < "$tmp/empty" > "$tmp/prom3"
check "empty input is valid exposition" grep -qx 'x_count 0' "$tmp/prom3"

# JSON output parses (python3 when present) and carries the histogram.
"$bin" hist --json --quantiles 0.5 < "$tmp/in" > "$tmp/json"
check "json exits 0" test $? -eq 0
if command -v python3 > "$tmp/which"; then
	check "json parses" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["count"] == 1000 and d["quantiles"][0]["value"] == 500
assert d["histogram"]["format"] == "allocprof-hist"
assert sum(b[2] for b in d["histogram"]["buckets"]) == 1000' "$tmp/json"
fi
"$bin" hist --otel 0 < "$tmp/in" > "$tmp/otel"
check "otel data point" grep -q '"count":"1000"' "$tmp/otel"
# Native schema 0 of 1..1000: buckets (2^(i-1), 2^i] for i = 0..10, no gap.
"$bin" hist --native 0 < "$tmp/in" > "$tmp/native"
check "native spans" grep -q '"positive_spans":\[{"offset":0,"length":11}\]' "$tmp/native"

# Bad input: exit 2, the line named, nothing on stdout.
printf '1 2\n3\n4 -5 6\n' | "$bin" hist > "$tmp/out" 2> "$tmp/err"
check "negative number exits 2" test $? -eq 2
check "line named" grep -q "line 3: '-5' is not a non-negative integer" "$tmp/err"
check "no output on bad input" test ! -s "$tmp/out"
printf '1\n2.5\n' | "$bin" hist --prometheus x > "$tmp/out" 2> "$tmp/err"
check "fraction exits 2" test $? -eq 2
check "fraction line named" grep -q "line 2: '2.5'" "$tmp/err"
check "no exposition on bad input" test ! -s "$tmp/out"
printf '18446744073709551616\n' | "$bin" hist > "$tmp/out" 2> "$tmp/err"
check "2^64 exits 2" test $? -eq 2
check "overflow explained" grep -q "line 1: .* larger than 2^64 - 1" "$tmp/err"
printf '18446744073709551615 0\n' | "$bin" hist > "$tmp/out"
check "2^64 - 1 accepted" grep -qx 'max     18446744073709551615' "$tmp/out"

# Usage errors: exit 1.
for args in "--sigbits 0" "--sigbits 16" "--sigbits x" "--quantiles 0.5,2" \
	"--quantiles ,0.5" "--bogus" "--json --prometheus x" "--prometheus 9x" \
	"--le 10,5 --prometheus x" "--le 10" "--otel 9" "--native -5" \
	"--native 0 --otel 0" "extra"; do
	# shellcheck disable=SC2086
	"$bin" hist $args < "$tmp/empty" > "$tmp/out" 2>&1
	check "usage error: $args" test $? -eq 1
done
"$bin" hist --help > "$tmp/out"
check "--help exits 0" test $? -eq 0
check "--help text" grep -q '^usage: allocprof hist' "$tmp/out"

# promtool: the authority on the exposition format (last, so a missing
# promtool still ran everything above; then report skipped).
if ! command -v promtool > "$tmp/which"; then
	echo "skip: promtool not installed (Debian package prometheus)"
	[ "$fail" -eq 0 ] && exit 77
	exit 1
fi
for f in prom prom2 prom3; do
	check "promtool accepts $f" promtool check metrics < "$tmp/$f"
done
(echo 0; echo 18446744073709551615) | "$bin" hist --prometheus wide > "$tmp/prom4"
check "promtool accepts extremes" promtool check metrics < "$tmp/prom4"
echo "$fail failed"
[ "$fail" -eq 0 ]
