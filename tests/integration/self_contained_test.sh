#!/usr/bin/env bash
# self_contained_test.sh: the repository stands alone. Fails when a tracked
# file points outside it, or cites a reference docs/REFERENCES.md lacks:
#   - the old sibling directory of design notes and test data, by any of
#     the paths it was reached through (its name after "../", or followed
#     by testdata, seeds or one of its documents);
#   - the design or formats document by bare file name: only their paths
#     under docs/ are allowed (inside docs/, a relative Markdown link to
#     them is that same file);
#   - a numbered seed document: the word seed(s) before a zero-padded
#     number, or such a number in square brackets;
#   - a citation [Rn] with no entry "**[Rn]" in docs/REFERENCES.md.
# Files are those git tracks (git ls-files), or every file under the source
# tree, build directories and .git excepted, when it is not a git checkout.
# The patterns are assembled from pieces so that this file, which is
# scanned like any other, does not match itself.
set -euo pipefail
src=${AP_SRCDIR:?AP_SRCDIR must name the source tree}
cd "$src"

files=$(mktemp)
trap 'rm -f "$files"' EXIT
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
   [ "$(git rev-parse --show-toplevel)" = "$(pwd -P)" ]; then
  git ls-files -z >"$files"
else
  find . \( -name .git -o -name 'build*' \) -prune -o -type f -print0 |
    sed -z 's|^\./||' >"$files"
fi

sh="shar""ed"
dm="DESIGN""\\.md"
fm="FORMATS""\\.md"
sd="seeds?"
declare -A why=(
  [1]="names the directory outside the repository"
  [2]="names the design or formats document outside docs/"
  [3]="cites a numbered seed document"
)
pat1="\\.\\./$sh\\b|(^|[^A-Za-z0-9_.-])$sh/(testdata|seeds|$dm|$fm|STATISTICS\\.md|STYLE\\.md|hooks)"
pat2="(^|[^/])($dm|$fm)"
pat3="(^|[^A-Za-z])$sd 00[0-4]|\\[00[0-4]\\]"

bad=0
report() { # file line-number text reason
  printf '%s:%s: %s\n    %s\n' "$1" "$2" "$4" "$3" >&2
  bad=1
}

while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  grep -Iq . "$f" 2>/dev/null || continue # binary or empty
  while IFS=: read -r n text; do
    report "$f" "$n" "$text" "${why[1]}"
  done < <(grep -n -E "$pat1" "$f" || true)
  # The two documents: only as docs/NAME, or a relative link inside docs/.
  while IFS=: read -r n text; do
    rest=$text
    case $f in docs/*) rest=$(sed -E "s/\\]\\(($dm|$fm)/](docs-link/g" <<<"$rest") ;; esac
    rest=$(sed -E "s#docs/($dm|$fm)##g" <<<"$rest")
    if grep -q -E "$pat2" <<<"$rest"; then
      report "$f" "$n" "$text" "${why[2]}"
    fi
  done < <(grep -n -E "$dm|$fm" "$f" || true)
  while IFS=: read -r n text; do
    report "$f" "$n" "$text" "${why[3]}"
  done < <(grep -n -i -E "$pat3" "$f" || true)
done <"$files"

# Every [Rn] cited anywhere has its entry in docs/REFERENCES.md.
refs=docs/REFERENCES.md
if [ ! -f "$refs" ]; then
  echo "self_contained: $refs is missing" >&2
  exit 1
fi
defined=$(grep -o -E '^\*\*\[R[0-9]+\]' "$refs" | tr -d '*' | sort -u)
cited=$(xargs -0 grep -I -h -o -E '\[R[0-9]+\]' <"$files" 2>/dev/null | sort -u || true)
for c in $cited; do
  if ! grep -qxF -- "$c" <<<"$defined"; then
    echo "self_contained: $c is cited but has no entry in $refs:" >&2
    xargs -0 grep -I -n -F -- "$c" <"$files" 2>/dev/null | head -3 >&2 || true
    bad=1
  fi
done

nfiles=$(tr -cd '\0' <"$files" | wc -c)
if [ "$bad" -ne 0 ]; then
  echo "self_contained: FAILED ($nfiles files checked)" >&2
  exit 1
fi
echo "self_contained: $nfiles files, nothing points outside the repository;" \
  "$(wc -w <<<"$cited") references cited, all in $refs"
