#!/usr/bin/env bash
# AP_TEST_PRELOAD: sites in the user's C++ code. tests/integration/progs/
# cxx_sites.cc allocates through operator new/new[], aligned new,
# std::string, std::vector, std::map, std::unordered_map and
# std::make_shared, std::function and std::ostringstream, and writes what
# each of its functions allocated. Run at
# rate 1 (exact), `report --by function` must name each of those functions
# as the site with exactly its bytes: the C++ runtime's frames (operator
# new, std::allocator, container internals, libstdc++ itself) are skipped
# at the leaf end and names are shortened. Then the frame options:
# --full-names, --no-skip, --skip; folded, flame and `--by stack` (leaf
# first) agree. Last, go tool pprof (when installed): the runtime's
# profile carries drop_frames, so pprof's flat bytes land on the caller of
# operator new and of the containers, not on the allocator.
set -euo pipefail
cli="$AP_BINDIR/allocprof"
prog="$AP_PROGDIR/cxx_sites"
[ -e "$AP_BINDIR/liballocprof_preload.so" ] || { echo "SKIP: no runtime built"; exit 77; }
[ -x "$prog" ] || { echo "SKIP: no C++ compiler, cxx_sites not built"; exit 77; }
command -v python3 > /dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cli" run -q -r 1 -o "$tmp/p.pb.gz" -- "$prog" "$tmp/expect" ||
  fail "allocprof run cxx_sites exited $?"
[ -s "$tmp/expect" ] || fail "the program wrote no expectations"

# check_sites PROFILE EXPECT: every user function is a site with exactly
# its bytes; no site is the C++ runtime's. clang names two of them its own
# way, which counts as the same function: an anonymous namespace's
# function with its namespace ("(anonymous namespace)::build_index") and
# a lambda by number ("main::$_1::operator()" for
# "main::{lambda(int)#1}::operator()").
check_sites() {
  "$cli" report --alloc --json --top 0 "$1" > "$tmp/r.json"
  python3 - "$2" "$tmp/r.json" <<'EOF' || fail "sites of $1 differ (above)"
import json, re, sys
want = {}
for line in open(sys.argv[1]):  # "expect NAME BYTES"
    name, n = line.rstrip("\n")[len("expect "):].rsplit(" ", 1)
    want[name] = int(n)
got = {s["function"]: s["bytes"] for s in json.load(open(sys.argv[2]))["sites"]}
def same(w, g):
    if g in (w, "(anonymous namespace)::" + w):
        return True
    m = re.fullmatch(r"(.*)::\{lambda\([^)]*\)#\d+\}::operator\(\)", w)
    return bool(m) and re.fullmatch(re.escape(m.group(1)) + r"::\$_\d+::operator\(\)", g)
bad = 0
for name, n in want.items():
    found = [g for g in got if same(name, g)]
    if len(found) != 1 or got[found[0]] != n:
        print(f"site {name}: report {[(g, got[g]) for g in found]}, program {n}")
        bad += 1
for name in got:
    if name.startswith(("std::", "operator ", "__gnu_cxx::", "libstdc++")) or "<int" in name:
        print(f"runtime frame or long name as a site: {name}")
        bad += 1
print(f"{len(want)} sites checked")
sys.exit(1 if bad else 0)
EOF
}
check_sites "$tmp/p.pb.gz" "$tmp/expect"

# The same program built by clang++ (when installed): its DWARF and its
# lambdas' names differ from GCC's, the sites must not.
if command -v clang++ > /dev/null; then
  clang++ -std=c++17 -g -O1 -fno-omit-frame-pointer -fno-inline -pthread \
    -o "$tmp/cxx_sites_clang" "$AP_SRCDIR/tests/integration/progs/cxx_sites.cc" 2> "$tmp/clang.err" ||
    fail "clang++ cxx_sites.cc: $(cat "$tmp/clang.err")"
  "$cli" run -q -r 1 -o "$tmp/clang.pb.gz" -- "$tmp/cxx_sites_clang" "$tmp/clang.expect" ||
    fail "allocprof run cxx_sites (clang) exited $?"
  check_sites "$tmp/clang.pb.gz" "$tmp/clang.expect"
  # clang writes no .debug_aranges: files and lines come from the units'
  # own ranges (libdwfl alone finds no unit for any address)
  grep -q '"function":"fill_vector","file":"[^"]*/cxx_sites.cc","line":[1-9]' "$tmp/r.json" ||
    fail "clang build: fill_vector without its file and line: $(head -c 600 "$tmp/r.json")"
fi

# --full-names keeps template arguments; the default collapses them.
"$cli" report --alloc --top 0 "$tmp/p.pb.gz" > "$tmp/short.txt"
"$cli" report --alloc --top 0 --full-names "$tmp/p.pb.gz" > "$tmp/full.txt"
grep -q ' share_all<>  ' "$tmp/short.txt" || fail "no share_all<> in: $(cat "$tmp/short.txt")"
grep -q ' share_all<Widget>  ' "$tmp/full.txt" || fail "no share_all<Widget> in: $(cat "$tmp/full.txt")"
grep -q ' main::{lambda(int)#1}::operator()  ' "$tmp/short.txt" || fail "lambda site misnamed"

# --no-skip shows the machinery: operator new becomes a site (the program's
# own replacement, with its line, now that the runtime serves operator new).
"$cli" report --alloc --top 0 --no-skip "$tmp/p.pb.gz" > "$tmp/noskip.txt"
grep -qE ' operator new($|  )' "$tmp/noskip.txt" || fail "--no-skip: no operator new site: $(cat "$tmp/noskip.txt")"
! grep -q ' fill_vector  ' "$tmp/noskip.txt" || fail "--no-skip still attributes to fill_vector"

# --skip adds the user's own wrapper: Widget's constructor is skipped, so
# its bytes go to share_all, past make_shared's frames.
"$cli" report --alloc --json --top 0 --skip '^Widget::Widget$' "$tmp/p.pb.gz" > "$tmp/skip.json"
python3 - "$tmp/expect" "$tmp/skip.json" <<'EOF' || fail "--skip moved the wrong bytes"
import json, sys
want = {}
for line in open(sys.argv[1]):
    name, n = line.rstrip("\n")[len("expect "):].rsplit(" ", 1)
    want[name] = int(n)
got = {s["function"]: s["bytes"] for s in json.load(open(sys.argv[2]))["sites"]}
assert "Widget::Widget" not in got, got
assert got["share_all<>"] == want["share_all<>"] + want["Widget::Widget"], got
EOF
"$cli" report --skip '(' "$tmp/p.pb.gz" > /dev/null 2> "$tmp/err" && fail "a bad --skip regex was accepted"
grep -q 'bad --skip regex' "$tmp/err" || fail "bad --skip message: $(cat "$tmp/err")"

# Folded stacks (and convert to folded) end in the user's frame, names short.
"$cli" folded --alloc "$tmp/p.pb.gz" > "$tmp/f.folded"
"$cli" convert --to folded --alloc "$tmp/p.pb.gz" -o "$tmp/c.folded"
cmp -s "$tmp/f.folded" "$tmp/c.folded" || fail "convert --to folded differs from folded"
grep -q ';main;fill_vector [0-9]*$' "$tmp/f.folded" || fail "no main;fill_vector: $(cat "$tmp/f.folded")"
! grep -Eq ';(std::|operator new)[^;]* [0-9]+$' "$tmp/f.folded" || fail "a folded stack ends in the runtime"
! grep -Eq ';(std::|operator new)[^;]* [0-9]+$' "$tmp/c.folded" || fail "convert: a stack ends in the runtime"
! grep -q 'std::allocator<' "$tmp/f.folded" || fail "template arguments in folded names"
# Inside a stack a run of C++ runtime frames shows only the user's call
# into the library: make_shared, then the constructor it ran.
grep -q ';main;share_all<>;std::make_shared<>;Widget::Widget 40800$' "$tmp/f.folded" ||
  fail "make_shared's run not collapsed: $(cat "$tmp/f.folded")"
"$cli" folded --alloc --no-skip "$tmp/p.pb.gz" | grep -q 'std::__shared_count<>' ||
  fail "--no-skip lost the frames inside make_shared"

# The flame graph names the user's functions, in short: the std:: frames
# left are those between two user frames (make_shared calling Widget's
# constructor), without their template arguments.
"$cli" flame --alloc "$tmp/p.pb.gz" > "$tmp/f.svg"
grep -q 'data-n="fill_vector"' "$tmp/f.svg" || fail "flame graph lacks fill_vector"
! grep -q 'std::allocator&lt;[a-z]' "$tmp/f.svg" || fail "flame graph shows template arguments"
! grep -q 'data-n="operator new' "$tmp/f.svg" || fail "flame graph shows operator new"

# --by stack: the site first, then its callers.
"$cli" report --alloc --by stack --top 0 "$tmp/p.pb.gz" > "$tmp/stack.txt"
grep -q ' fill_vector <- main <- ' "$tmp/stack.txt" || fail "--by stack not leaf first: $(cat "$tmp/stack.txt")"

# ---- go tool pprof and the profile's drop_frames ---------------------------
if ! command -v go > /dev/null; then
  echo "ok (go tool pprof part skipped: go not installed)"
  exit 0
fi
export HOME=$tmp/home GOCACHE=$tmp/gocache GOPATH=$tmp/gopath
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS='' GO111MODULE=auto
mkdir -p "$HOME"
# flat NAME FILE: pprof's flat bytes of function NAME (-top, in bytes).
top() { timeout 120 go tool pprof -top -unit=B -sample_index=alloc_space "$1" 2>&1; }
# (the name is the rest of the line after pprof's five number columns: a
# name may have spaces)
flat() {
  awk -v f="$1" '{ n = $0; for (i = 1; i <= 5; i++) sub(/^ *[^ ]+/, "", n)
    sub(/^ +/, "", n); if (n == f) { sub(/B$/, "", $1); print $1 } }' <<<"$2"
}
want() { grep -F "expect $1 " "$tmp/expect" | awk '{ print $NF }'; }
# The runtime's own profile, symbolized by pprof: new Node and new char[]
# count for make_nodes, not for operator new.
t=$(top "$tmp/p.pb.gz")
[ "$(flat make_nodes "$t")" = "$(want make_nodes)" ] ||
  fail "pprof: make_nodes flat is not its bytes $(want make_nodes): $t"
! grep -q 'operator new' <<<"$t" || fail "pprof: operator new kept its bytes: $t"
# pprof names no template instantiation of the program (its symbolizer
# leaves them empty, so no regex can match them); with allocprof's names
# (convert --symbolize) every container site is the user's, exactly.
"$cli" convert --to pprof --symbolize "$tmp/p.pb.gz" -o "$tmp/s.pb.gz"
t=$(top "$tmp/s.pb.gz")
# Not store_callbacks: pprof cuts a name at its first '(' before matching,
# so std::function<long (long)>'s constructor (which copies the lambda to
# the heap) and its call operator (which calls it) both read
# "std::function<long ": a regex naming the one would hide the user's
# callbacks under the other. pprof puts those bytes on the constructor.
for f in fill_vector build_index make_strings make_lines \
  raw_buffers app::Cache::put format_numbers; do
  [ "$(flat "$f" "$t")" = "$(want "$f")" ] ||
    fail "pprof: $f flat $(flat "$f" "$t"), program $(want "$f"): $t"
done
! grep -Eq '  (std::|operator new)' <<<"$t" || fail "pprof: flat bytes on the runtime: $t"
echo "ok"
