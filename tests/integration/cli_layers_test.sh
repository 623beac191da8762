#!/usr/bin/env bash
# cli_layers_test.sh: src/cli keeps its layers (src/cli/LAYERS; see
# docs/HACKING.md).
#  1. Every .c and .h file in src/cli has a layer in LAYERS.
#  2. No file includes ("...") a src/cli header of a higher layer.
#  3. The include graph between files (NAME.c and NAME.h count as one file
#     NAME) has no cycle, so no file both uses and is used by another.
#  4. The same holds for calls: in the built object files, a symbol one
#     file uses and another defines never goes up a layer, and the
#     file-level call graph has no cycle.
# Run with AP_SRCDIR (and AP_BINDIR for check 4); CLI_LAYERS_DIR overrides
# the directory checked (used to show the test fails on a bad include).
set -euo pipefail
: "${AP_SRCDIR:?}"
dir=${CLI_LAYERS_DIR:-$AP_SRCDIR/src/cli}
table=$dir/LAYERS
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -r "$table" ] || fail "no $table"

declare -A layer
patterns=()
while read -r lv names; do
	[[ -z "$lv" || "$lv" == \#* ]] && continue
	[[ "$lv" =~ ^[0-9]+$ ]] || fail "LAYERS: bad layer '$lv'"
	for n in $names; do
		patterns+=("$n")
		layer[$n]=$lv
	done
done < "$table"

layer_of() { # NAME -> its layer, or nothing
	local p
	for p in "${patterns[@]}"; do
		# shellcheck disable=SC2053 # p is a pattern on purpose
		if [[ "$1" == $p ]]; then
			echo "${layer[$p]}"
			return
		fi
	done
}

# 1. every file has a layer
declare -A lof
for f in "$dir"/*.c "$dir"/*.h; do
	n=$(basename "$f")
	n=${n%.*}
	l=$(layer_of "$n")
	[ -n "$l" ] || fail "src/cli/$(basename "$f") has no layer in LAYERS"
	lof[$n]=$l
done

# 2. includes go down (or stay level); collect the file graph for 3.
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for f in "$dir"/*.c "$dir"/*.h; do
	n=$(basename "$f")
	n=${n%.*}
	while read -r h; do
		m=${h%.h}
		if [ ! -e "$dir/$h" ]; then
			# From outside src/cli: below every layer, unless LAYERS
			# names it (a generated header).
			l=$(layer_of "$m")
			[ -n "$l" ] || continue
		else
			l=${lof[$m]}
		fi
		[ "$l" -le "${lof[$n]}" ] ||
			fail "$(basename "$f") (layer ${lof[$n]}) includes $h (layer $l)"
		[ "$m" = "$n" ] || echo "$n $m" >> "$edges"
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done

# 3. no cycle: tsort lists one if there is
if ! tsort "$edges" > /dev/null 2> "$edges.err"; then
	cat "$edges.err" >&2
	rm -f "$edges.err"
	fail "the include graph of src/cli has a cycle (above)"
fi
rm -f "$edges.err"
echo "includes: $(sort -u "$edges" | wc -l) edges between ${#lof[@]} files, all downward, no cycle"

[ -z "${CLI_LAYERS_DIR:-}" ] || exit 0

# The check can fail: a copy of src/cli with one include planted upward
# (cli_util.c, layer 0, including report.h) must be refused.
plant=$(mktemp -d)
trap 'rm -f "$edges"; rm -rf "$plant"' EXIT
cp "$dir"/LAYERS "$dir"/*.c "$dir"/*.h "$plant"/
printf '#include "report.h"\n' >> "$plant/cli_util.c"
if CLI_LAYERS_DIR=$plant bash "$0" > /dev/null 2>&1; then
	fail "a planted upward include (cli_util.c -> report.h) was not caught"
fi

# 4. calls, from the object files of a build
: "${AP_BINDIR:?}"
objdir=$AP_BINDIR/src/cli/CMakeFiles
objs=
for f in "$dir"/*.c; do # the current sources' objects, not stale ones
	o=$(find "$objdir" -name "$(basename "$f").o" 2>/dev/null | head -1)
	[ -n "$o" ] || fail "no object file for $(basename "$f") under $objdir"
	objs+=" $o"
done
declare -A def
for o in $objs; do
	n=$(basename "$o" .c.o)
	for s in $(nm --defined-only -g "$o" | awk '$2 ~ /[TDRB]/ {print $3}'); do
		def[$s]=$n
	done
done
: > "$edges"
for o in $objs; do
	n=$(basename "$o" .c.o)
	for s in $(nm --undefined-only -g "$o" | awk '{print $NF}'); do
		m=${def[$s]:-}
		[ -n "$m" ] && [ "$m" != "$n" ] || continue
		[ "${lof[$m]}" -le "${lof[$n]}" ] ||
			fail "$n.c (layer ${lof[$n]}) calls $s in $m.c (layer ${lof[$m]})"
		echo "$n $m" >> "$edges"
	done
done
if ! tsort "$edges" > /dev/null 2> "$edges.err"; then
	cat "$edges.err" >&2
	rm -f "$edges.err"
	fail "the call graph between src/cli files has a cycle (above)"
fi
rm -f "$edges.err"
echo "calls: $(sort -u "$edges" | wc -l) edges between files, all downward, no cycle"
