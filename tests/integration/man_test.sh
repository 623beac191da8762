#!/usr/bin/env bash
# docs/allocprof.1: renders without a single warning (groff -man -ww, and
# man -l), documents every subcommand main.c dispatches, every long option
# each command's --help lists, and every ALLOCPROF_OPTIONS key the
# runtime's option table accepts; and `cmake --install` installs it.
set -euo pipefail
page="$AP_SRCDIR/docs/allocprof.1"
cli="$AP_BINDIR/allocprof"
command -v groff > /dev/null || { echo "SKIP: groff not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$page" ] || fail "no $page"

groff -man -Tutf8 -ww -z "$page" > "$tmp/warn" 2>&1 || fail "groff exited $?"
[ ! -s "$tmp/warn" ] || fail "groff warnings: $(cat "$tmp/warn")"
if command -v man > /dev/null; then
  MANWIDTH=80 man -l "$page" > "$tmp/rendered" 2> "$tmp/warn" || fail "man -l exited $?"
  [ ! -s "$tmp/warn" ] || fail "man -l warnings: $(cat "$tmp/warn")"
  grep -q '^NAME' "$tmp/rendered" || fail "rendered page has no NAME section"
fi
for sec in NAME SYNOPSIS DESCRIPTION COMMANDS ENVIRONMENT "EXIT STATUS" EXAMPLES "SEE ALSO"; do
  grep -q "^\.SH \"\\?$sec" "$page" || fail "no $sec section"
done

# Every subcommand of the dispatcher has its own subsection.
cmds=$(sed -n 's/^[[:space:]]*{"\([a-z]*\)", ap_cmd_.*/\1/p' "$AP_SRCDIR/src/cli/main.c")
[ -n "$cmds" ] || fail "could not read the command list from main.c"
for c in $cmds; do
  grep -q "^\.SS \"allocprof $c " "$page" || fail "command '$c' has no .SS section"
done

# Every long option of every command is documented (as \-\-opt); every
# command is built, so each must answer --help.
checked=0
for c in $cmds; do
  "$cli" "$c" --help > "$tmp/help" || fail "'allocprof $c --help' failed"
  checked=$((checked + 1))
  # The help reads in an 80-column terminal: no line is wider, and no line
  # has a run of spaces after its first word (a usage line whose string
  # literals were joined without a newline).
  wide=$(awk 'length($0) > 80' "$tmp/help" | head -1)
  [ -z "$wide" ] || fail "'allocprof $c --help' has a line over 80 columns: $wide"
  gap=$(grep -E '^ *[^ ].*[^ ] {12,}\[' "$tmp/help" | head -1 || true)
  [ -z "$gap" ] || fail "'allocprof $c --help' has a broken usage line: $gap"
  for opt in $(grep -o -- '--[a-z][a-z-]*' "$tmp/help" | sort -u); do
    [ "$opt" = --help ] && continue
    grep -qF -- "${opt//-/\\-}" "$page" ||
      fail "'allocprof $c $opt' (from its --help) is not in the man page"
  done
done

# Every runtime option key is documented under ALLOCPROF_OPTIONS.
cfg="$AP_SRCDIR/src/preload/config.c"
keys=$(sed -n 's/^[[:space:]]*{ *"\([a-z_]*\)", AP_OPT_.*/\1/p' "$cfg")
[ -n "$keys" ] || fail "could not read the option keys from config.c"
for k in $keys; do
  grep -q "^\.BI $k= " "$page" || fail "ALLOCPROF_OPTIONS key '$k' not documented"
done

# The install step puts the page in man1.
cmake --install "$AP_BINDIR" --prefix "$tmp/prefix" > /dev/null 2>&1 ||
  fail "cmake --install failed"
found=$(find "$tmp/prefix" -path '*/man1/allocprof.1' | head -1)
[ -n "$found" ] || fail "allocprof.1 not installed under man1"
cmp -s "$found" "$page" || fail "installed page differs from docs/allocprof.1"
echo "man page: ok ($checked commands' options checked)"
