#!/usr/bin/env bash
# AP_TEST_PRELOAD: sites in the user's Rust code. tests/integration/progs/
# rs_sites.rs (built here with rustc, twice: with the compiler's default
# symbol mangling and with v0, the one current toolchains build the
# standard library with) allocates through Box, Vec, String, format!,
# HashMap and a closure collected into a Vec. Run at rate 1 (exact):
# - `report --by function` names each of its functions as the site, with
#   exactly the bytes its code asks for where the code fixes them; no site
#   is Rust's allocation machinery (alloc::, hashbrown::, the __rust_alloc
#   shims, the library's inlined frames named only "alloc" or "allocate");
# - every name is demangled: no "_R..." or "_ZN...17h<hash>E" symbol, no
#   legacy "$LT$"/"$u7b$" escapes, no hash suffix;
# - folded stacks end in the program's functions;
# - go tool pprof (when installed), through the profile's drop_frames, puts
#   the flat bytes on the same functions.
. "$(dirname "$0")/preload_smoke_test.sh"
src="$AP_SRCDIR/tests/integration/progs/rs_sites.rs"
command -v rustc > /dev/null || skip "rustc not installed"
command -v python3 > /dev/null || skip "python3 not installed"
cli=$CLI tmp=$TMP

check() { # check NAME: the checks above on the build $tmp/NAME
  local p=$tmp/$1
  "$cli" run -q -r 1 -o "$p.pb.gz" -- "$p" "$p.expect" || fail "$1: allocprof run exited $?"
  [ -s "$p.expect" ] || fail "$1: the program wrote no expectations"
  "$cli" report --alloc --json --top 0 "$p.pb.gz" > "$p.json"
  "$cli" report --alloc --json --top 0 --by stack --no-skip "$p.pb.gz" > "$p.stacks.json"
  python3 - "$p.expect" "$p.json" "$p.stacks.json" <<'EOF' || fail "$1: sites or names wrong (above)"
import json, re, sys
sites = json.load(open(sys.argv[2]))["sites"]
got = {}
for s in sites:
    got[s["function"]] = got.get(s["function"], 0) + s["bytes"]
def under(fn):  # the function and its closures
    return sum(b for f, b in got.items()
               if f == "rs_sites::" + fn or f.startswith("rs_sites::" + fn + "::{"))
bad = 0
for line in open(sys.argv[1]):
    kind, rest = line.rstrip("\n").split(" ", 1)
    if kind == "expect":
        fn, n = rest.rsplit(" ", 1)
        if under(fn) != int(n):
            print(f"site rs_sites::{fn}: report {under(fn)} bytes, program {n}")
            bad += 1
    elif under(rest) <= 0:
        print(f"site rs_sites::{rest}: no bytes")
        bad += 1
machinery = re.compile(r"^(<[^ >]* as )?<?(alloc|core|hashbrown)::|^<?std::collections::|"
                       r"^__(rust|rdl|rg)_|^(alloc|allocate|alloc_impl|do_alloc|"
                       r"exchange_malloc|finish_grow|grow_one|reserve_rehash)$")
for f in got:
    if machinery.search(f):
        print(f"Rust allocation machinery as a site: {f}")
        bad += 1
mangled = re.compile(r"^_R[0-9A-Za-z_]|^_ZN.*17h[0-9a-f]{16}E|\$(LT|GT|C|u[0-9a-f]+)\$|::h[0-9a-f]{16}$")
names = {f for s in json.load(open(sys.argv[3]))["sites"] for f in s["stack"]}
for f in sorted(names):
    if mangled.search(f):
        print(f"not demangled: {f}")
        bad += 1
if not any(f.startswith("<alloc::") or f.startswith("alloc::") for f in names):
    print("--no-skip shows no frame of the alloc crate")
    bad += 1
sys.exit(1 if bad else 0)
EOF
  "$cli" folded --alloc "$p.pb.gz" > "$p.folded"
  grep -q ';rs_sites::main;rs_sites::make_boxes [0-9]*$' "$p.folded" ||
    fail "$1: no main;make_boxes in: $(cat "$p.folded")"
  ! grep -Eq ';<?(alloc|hashbrown)::[^;]* [0-9]+$' "$p.folded" ||
    fail "$1: a folded stack ends in the library: $(cat "$p.folded")"
}

# -C symbol-mangling-version is stable since Rust 1.59.
rustc -O -g -o "$tmp/legacy" "$src" 2> "$tmp/rustc.err" || fail "rustc: $(cat "$tmp/rustc.err")"
rustc -O -g -C symbol-mangling-version=v0 -o "$tmp/v0" "$src" 2> "$tmp/rustc.err" ||
  fail "rustc -C symbol-mangling-version=v0: $(cat "$tmp/rustc.err")"
check legacy
check v0

# ---- go tool pprof and the profile's drop_frames ---------------------------
command -v go > /dev/null || { echo "ok (go tool pprof part skipped: go not installed)"; exit 0; }
for b in legacy v0; do
  t=$(go_pprof -top -unit=B -sample_index=alloc_space "$tmp/$b.pb.gz" 2>&1)
  for f in make_boxes make_strings closure_boxes; do
    n=$(awk -v f="rs_sites::$f" '$6 == f { sub(/B$/, "", $1); print $1 }' <<<"$t")
    w=$(grep -F "expect $f " "$tmp/$b.expect" | awk '{ print $NF }')
    [ "$n" = "$w" ] || fail "pprof ($b): rs_sites::$f flat ${n:-none}, program $w: $t"
  done
  ! grep -Eq ' (<?alloc::|hashbrown::|__rust_alloc|__rdl_alloc)' <<<"$t" ||
    fail "pprof ($b): flat bytes on Rust's allocation machinery: $t"
done
echo "ok"
