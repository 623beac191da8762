#!/usr/bin/env bash
# allocprof ci: the negative-binomial interval from the command line. Checks
# [R4]'s worked example (s = 8, u = 10908, R = 102400, C = 0.95 gives
# [353666 + u, 1476870 + u], +-2 for [R4]'s rounding), the exact JSON
# shape, the open-window compensation, R = 1, and that every bad or missing
# argument exits 1 with exactly one line on stderr and nothing on stdout.
set -euo pipefail
cli="$AP_BINDIR/allocprof"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
EXPECT_DIR=$tmp
# shellcheck source=cli_expect.sh
. "$(dirname "$0")/cli_expect.sh"

# within A B TOL: |A - B| <= TOL (integers).
within() { local d=$(( $1 - $2 )); [ "${d#-}" -le "$3" ]; }

# --- [R4]'s example, text and JSON -------------------------------------------
"$cli" ci --samples 8 --u 10908 --rate 102400 > "$tmp/out" ||
	fail "[R4] example exited $?"
grep -q '^estimate: 830100 bytes$' "$tmp/out" || fail "text estimate: $(cat "$tmp/out")"
grep -q '^95% interval: \[' "$tmp/out" || fail "text interval: $(cat "$tmp/out")"

"$cli" ci --samples 8 --u 10908 --rate 102400 --json > "$tmp/json"
re='^\{"samples":8,"u":10908,"rate":102400,"level":0\.95,"estimate":830100,"lo":([0-9]+),"hi":([0-9]+)\}$'
[[ "$(cat "$tmp/json")" =~ $re ]] || fail "JSON shape: $(cat "$tmp/json")"
lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
within "$lo" 364574 2 || fail "[R4] lower bound $lo, want 364574 +-2"
within "$hi" 1487778 2 || fail "[R4] upper bound $hi, want 1487778 +-2"
[ "$(wc -l < "$tmp/json")" = 1 ] || fail "JSON is not one line"

# --- level and open ends move the bounds the right way -----------------------
json_field() { sed -E "s/.*\"$1\":([0-9.e+-]+).*/\1/" "$2"; }
"$cli" ci --samples 8 --u 10908 --rate 102400 --level 0.5 --json > "$tmp/l50"
[ "$(json_field level "$tmp/l50")" = 0.5 ] || fail "level not echoed"
[ "$(json_field lo "$tmp/l50")" -gt "$lo" ] || fail "50% lower bound not above 95%"
[ "$(json_field hi "$tmp/l50")" -lt "$hi" ] || fail "50% upper bound not below 95%"

# open start = lower bound of 7 samples, open end = upper bound of 9.
"$cli" ci --samples 8 --u 10908 --rate 102400 --open-start --open-end --json > "$tmp/open"
"$cli" ci --samples 7 --u 10908 --rate 102400 --json > "$tmp/s7"
"$cli" ci --samples 9 --u 10908 --rate 102400 --json > "$tmp/s9"
[ "$(json_field lo "$tmp/open")" = "$(json_field lo "$tmp/s7")" ] || fail "--open-start"
[ "$(json_field hi "$tmp/open")" = "$(json_field hi "$tmp/s9")" ] || fail "--open-end"
[ "$(json_field estimate "$tmp/open")" = 830100 ] || fail "open ends moved the estimate"

# no samples: [0, 0] for a closed window, up to one sample's worth when open.
"$cli" ci --samples 0 --u 0 --rate 102400 --json > "$tmp/zero"
grep -q '"estimate":0,"lo":0,"hi":0}' "$tmp/zero" || fail "s=0 closed: $(cat "$tmp/zero")"
"$cli" ci --samples 0 --u 0 --rate 102400 --open-end --json > "$tmp/zero"
within "$(json_field hi "$tmp/zero")" 377738 2 || fail "s=0 open end: $(cat "$tmp/zero")"

# R = 1: every byte is a sample, the interval collapses to u.
"$cli" ci --samples 40 --u 5000 --rate 1 --json > "$tmp/r1"
grep -q '"estimate":5000,"lo":5000,"hi":5000}' "$tmp/r1" || fail "R=1: $(cat "$tmp/r1")"

# --- help ------------------------------------------------------------------------
"$cli" ci --help > "$tmp/help" || fail "--help exited $?"
grep -q '^usage: allocprof ci' "$tmp/help" || fail "--help prints no usage"

# --- usage errors: exit 1, one line on stderr naming the problem, no stdout ---
# expect_usage PATTERN ARGS...
expect_usage() {
	local pat=$1
	shift
	expect_status 1 "$cli" ci "$@"
	grep -q -- "$pat" "$tmp/err" || fail "ci $*: message lacks '$pat': $(cat "$tmp/err")"
}
expect_usage 'missing --samples'
expect_usage 'missing --u' --samples 8 --rate 102400
expect_usage 'missing --rate' --samples 8 --u 10908
expect_usage 'missing --samples' --u 1 --rate 2
expect_usage "'x'" --samples x --u 1 --rate 2
expect_usage "'-1'" --samples -1 --u 1 --rate 2
expect_usage "'1.5'" --samples 1.5 --u 1 --rate 2
expect_usage "'18446744073709551616'" --samples 18446744073709551616 --u 1 --rate 2
expect_usage "'-3'" --samples 8 --u -3 --rate 2
expect_usage "'nan'" --samples 8 --u nan --rate 2
expect_usage "'inf'" --samples 8 --u 1 --rate inf
expect_usage "'0.5'" --samples 8 --u 1 --rate 0.5
expect_usage "'0'" --samples 8 --u 1 --rate 0
expect_usage "'1'" --samples 8 --u 1 --rate 2 --level 1
expect_usage "'0'" --samples 8 --u 1 --rate 2 --level 0
expect_usage "'95'" --samples 8 --u 1 --rate 2 --level 95
expect_usage "''" --samples 8 --u 1 --rate ''
expect_usage 'needs a value' --samples 8 --u 1 --rate
expect_usage 'unknown option' --samples 8 --u 1 --rate 2 --bogus
expect_usage 'unexpected argument' --samples 8 --u 1 --rate 2 extra
expect_usage 'must be 0' --samples 0 --u 5 --rate 10
expect_usage '2^53' --samples 1000000 --u 1 --rate 1e13
echo "ok"
