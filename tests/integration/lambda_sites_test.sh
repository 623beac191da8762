#!/usr/bin/env bash
# AP_TEST_PRELOAD: lambdas as sites, as GCC builds them. progs/lambda_sites.cc
# has lambdas that allocate known bytes: two of one signature, one of
# another, a mutable one, one nested in another, a generic one called
# with an int and with a double. Built with -O2 GCC
# inlines them all, and its DWARF names each inlined lambda only
# "operator()": a report by function summed them in one row. Built again
# with -DOUTLINE, each is a function of its own, named by its ELF symbol
# as the demangler reads it; and with -flto. At rate 1 (exact) every build
# must give the same sites, each named as the demangler names the lambda (its
# function, parameter types and number) with exactly its bytes, in the
# default names and in --full-names.
set -euo pipefail
cli="$AP_BINDIR/allocprof"
prog="$AP_PROGDIR/lambda_sites"
[ -e "$AP_BINDIR/liballocprof_preload.so" ] || { echo "SKIP: no runtime built"; exit 77; }
[ -x "$prog" ] || { echo "SKIP: no C++ compiler, lambda_sites not built"; exit 77; }
command -v python3 > /dev/null || { echo "SKIP: python3 not installed"; exit 77; }
command -v g++ > /dev/null || { echo "SKIP: g++ not installed"; exit 77; }
grep -q "GNU C++" "$prog" || { echo "SKIP: lambda_sites not built by GCC"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The -O2 build must really have inlined them: no lambda has a symbol.
! nm -C "$prog" | grep -q '{lambda(.*operator()' ||
  fail "lambda_sites: a lambda was not inlined: $(nm -C "$prog" | grep '{lambda(' | head -3)"
g++ -std=c++17 -O2 -g -DOUTLINE -o "$tmp/outline" \
  "$AP_SRCDIR/tests/integration/progs/lambda_sites.cc" 2> "$tmp/gxx.err" ||
  fail "g++ -DOUTLINE lambda_sites.cc: $(cat "$tmp/gxx.err")"
[ "$(nm -C "$tmp/outline" | grep -c '{lambda(.*operator()')" -ge 8 ] ||
  fail "-DOUTLINE: want eight lambda functions with symbols: $(nm -C "$tmp/outline" | grep lambda)"
# Link-time optimisation: the code's units ("GNU GIMPLE") point into the
# compile-time units, where the closure types are.
g++ -std=c++17 -O2 -g -flto -o "$tmp/lto" \
  "$AP_SRCDIR/tests/integration/progs/lambda_sites.cc" 2> "$tmp/gxx.err" ||
  fail "g++ -flto lambda_sites.cc: $(cat "$tmp/gxx.err")"

for b in inline outline lto; do
  exe=$prog
  [ $b = inline ] || exe=$tmp/$b
  "$cli" run -q -r 1 -o "$tmp/$b.pb.gz" -- "$exe" > /dev/null || fail "allocprof run ($b) exited $?"
  "$cli" report --alloc --json --top 0 "$tmp/$b.pb.gz" > "$tmp/$b.json"
  "$cli" report --alloc --json --top 0 --full-names "$tmp/$b.pb.gz" > "$tmp/$b.full.json"
done

python3 - "$tmp" <<'PY' || fail "lambda sites differ (above)"
import json, sys
tmp = sys.argv[1]
# the generic lambda is one function in the default names, two in the full
want = {"": sorted([100000, 200000, 300000, 400000, 500000, 800000, 1200000]),
        ".full": sorted([100000, 200000, 300000, 350000, 400000, 450000, 500000, 1200000])}
bad = 0
def lambdas(path):
    sites = json.load(open(path))["sites"]
    return {s["function"]: s["bytes"] for s in sites if "{lambda(" in s["function"]}
for view in ("", ".full"):
    got = {b: lambdas(f"{tmp}/{b}{view}.json") for b in ("inline", "outline", "lto")}
    for b, sites in got.items():
        if sorted(sites.values()) != want[view]:
            print(f"{b}{view}: lambda sites {sites}, want one of each of {want[view]} bytes")
            bad += 1
        if sites != got["outline"]:
            print(f"{b}{view} {sites}\n  != outline{view} {got['outline']}")
            bad += 1
    names = " ".join(got["inline"])
    nested = "::operator()" + ("(int) const" if view else "") + "::{lambda(int)#1}::operator()"
    for part in ("app::Store::fill", "{lambda(int const&)#", nested, "{lambda(auto:1)#"):
        if part not in names:
            print(f"inline{view}: no name with {part!r} among {sorted(got['inline'])}")
            bad += 1
    print(f"{view or 'default'} names: {sorted(got['inline'])}")
sys.exit(1 if bad else 0)
PY
echo "lambda sites: ok"
