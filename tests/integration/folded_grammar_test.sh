#!/usr/bin/env bash
# allocprof folded: every line matches the folded-stack grammar
#   ^[^ ;][^;]*(;[^;]+)* [0-9]+$
# even for hostile frame names, weights sum to the view's total, stacks
# whose names coincide are merged, output is sorted and deterministic, and
# bad input exits 2 with exactly one line on stderr (usage errors exit 1).
set -euo pipefail
cli="$AP_BINDIR/allocprof"
mk="$AP_PROGDIR/view_mkprof"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
EXPECT_DIR=$tmp
# shellcheck source=cli_expect.sh
. "$(dirname "$0")/cli_expect.sh"

# size alloc_samples inuse_samples stack. Names with ';', a newline, a tab,
# leading spaces, an empty frame, markup and invalid UTF-8 (\xff).
cat > "$tmp/desc" <<'EOF'
64 10 4 main;parse;xmalloc
1048576 20 20 main;load_cache;buffer_new
4096 5 0 main;parse;tokenize
100 3 3 main;semi\x3bcolon;new\x0aline\x09tab
200 2 1 \x20\x20spaced root;leaf
300 4 4 main;\x3cT\x26\x22q\x22\x3e;bad\xffutf8
500 7 2 main;parse;xmalloc
EOF
"$mk" 524288 "$tmp/p.pb" < "$tmp/desc" > "$tmp/totals"
# shellcheck disable=SC1090
eval "$(cat "$tmp/totals")"

grammar='^[^ ;][^;]*(;[^;]+)* [0-9]+$'
for view in alloc inuse; do
  "$cli" folded --$view "$tmp/p.pb" > "$tmp/$view.folded" 2> "$tmp/err" ||
    fail "folded --$view exited $?: $(cat "$tmp/err")"
  [ -s "$tmp/$view.folded" ] || fail "folded --$view printed nothing"
  [ ! -s "$tmp/err" ] || fail "folded --$view wrote to stderr: $(cat "$tmp/err")"
  if LC_ALL=C grep -Evn "$grammar" "$tmp/$view.folded"; then
    fail "--$view: the lines above break the folded grammar"
  fi
  sum=$(awk '{ s += $NF } END { printf "%d", s }' "$tmp/$view.folded")
  want=${view}_bytes
  [ "$sum" = "${!want}" ] || fail "--$view: weights sum to $sum, total is ${!want}"
  # One line per unique stack, sorted (byte order).
  cut -d' ' -f1 "$tmp/$view.folded" | LC_ALL=C sort -c ||
    fail "--$view: lines not sorted"
  n=$(awk '{ $NF = ""; print }' "$tmp/$view.folded" | sort | uniq -d | wc -l)
  [ "$n" = 0 ] || fail "--$view: duplicate stacks"
done

# Two description lines share main;parse;xmalloc: one folded line.
n=$(grep -c '^main;parse;xmalloc ' "$tmp/alloc.folded") || true
[ "$n" = 1 ] || fail "main;parse;xmalloc appears $n times"
# Sanitised names: ';' -> ':', controls -> '?', leading spaces dropped.
grep -q '^main;semi:colon;new?line?tab [0-9]*$' "$tmp/alloc.folded" ||
  fail "';' or control characters not replaced"
grep -q '^spaced root;leaf [0-9]*$' "$tmp/alloc.folded" ||
  fail "leading spaces of the root frame kept"
grep -q '^main;<T&"q">;bad' "$tmp/alloc.folded" ||
  fail "markup characters should pass through folded output unchanged"
# tokenize has no live bytes: absent from the inuse view only.
grep -q 'tokenize' "$tmp/alloc.folded" || fail "tokenize missing (alloc)"
! grep -q 'tokenize' "$tmp/inuse.folded" || fail "tokenize in the inuse view"
# Default view is inuse; output is deterministic.
"$cli" folded "$tmp/p.pb" | cmp -s - "$tmp/inuse.folded" ||
  fail "default view differs from --inuse"
"$cli" folded --inuse "$tmp/p.pb" "$tmp/p.pb" > "$tmp/twice"
awk '{ s += $NF } END { printf "%d\n", s }' "$tmp/twice" | grep -qx "$((2 * inuse_bytes))" ||
  fail "two profiles are not merged (sum of weights)"

# At rate 1 the weights are the exact bytes.
printf '10 3 1 main;a\n7 2 2 main;b\n' | "$mk" 1 "$tmp/exact.pb" > /dev/null
"$cli" folded --alloc "$tmp/exact.pb" > "$tmp/exact.folded"
printf 'main;a 30\nmain;b 14\n' | cmp -s - "$tmp/exact.folded" ||
  fail "rate 1: $(cat "$tmp/exact.folded")"

# An empty profile: no lines, exit 0.
: | "$mk" 524288 "$tmp/empty.pb" > /dev/null
"$cli" folded "$tmp/empty.pb" > "$tmp/out" || fail "empty profile exited $?"
[ ! -s "$tmp/out" ] || fail "empty profile printed lines"

# Bad input: exit 2 and exactly one line on stderr.
head -c 100 "$tmp/p.pb" > "$tmp/trunc.pb"
printf 'this is not a profile\n' > "$tmp/garbage.pb"
: > "$tmp/zero.pb"
printf '\x1f\x8b\x08\x00garbage' > "$tmp/badgz.pb"
for bad in "$tmp/trunc.pb" "$tmp/garbage.pb" "$tmp/zero.pb" \
           "$tmp/badgz.pb" "$tmp/missing.pb"; do
  expect_status 2 "$cli" folded "$bad"
  grep -q '^allocprof folded: ' "$tmp/err" || fail "message lacks the command's prefix"
done

# Usage errors: exit 1, one line.
for args in "" "--bogus $tmp/p.pb" "--focus" "--focus ( $tmp/p.pb"; do
  # shellcheck disable=SC2086
  expect_status 1 "$cli" folded $args
done
"$cli" folded --help | grep -q '^usage: allocprof folded' || fail "--help"
echo "folded grammar: ok"
