#!/usr/bin/env bash
# attach_canonical_plt_test.sh: attaching to an executable built without
# PIE that takes malloc's address in its code (Debian's python3 and node
# are such). The executable then exports a canonical PLT entry for malloc:
# an undefined symbol with the entry's address, which dlsym(RTLD_DEFAULT)
# returns. The runtime must look past it to the allocator's own malloc:
# the entry jumps through the GOT slot the attach points at the runtime
# (taken as the allocator, every call would recurse), and as it lies in
# another object than posix_memalign the attach used to be refused with
# "cannot find the allocator underneath".
# progs/attach_inproc.c built here with -no-pie, in its --reseed mode: four
# attach/detach windows; each must attach and write a profile that holds
# the program's two allocation sites.
# (AP_TEST_PRELOAD: needs the runtime; skipped in sanitizer builds.)
set -euo pipefail
. "$(dirname "$0")/preload_smoke_test.sh"
SRC=$AP_SRCDIR/tests/integration/progs/attach_inproc.c
command -v cc >/dev/null || skip "no C compiler"
[ "$(uname -m)" = x86_64 ] || skip "attach supports x86_64 only"
cc -O1 -fno-pie -no-pie -o "$TMP/prog" "$SRC" -ldl 2>"$TMP/cc.err" ||
	skip "cannot build without PIE here: $(head -1 "$TMP/cc.err")"
# The premise: malloc is exported by the executable itself, at an address
# (readelf's Ndx column says UND: a PLT entry, not a definition).
readelf --dyn-syms -W "$TMP/prog" |
	awk '$8 == "malloc" || $8 ~ /^malloc@/ { if ($2 !~ /^0+$/ && $7 == "UND") ok = 1 } END { exit !ok }' ||
	skip "the linker made no canonical PLT entry for malloc"
mkdir -p "$TMP/out"
out=$("$TMP/prog" "$LIB" --reseed "$TMP/out" 2>"$TMP/err") ||
	fail "attach_inproc without PIE: $out; $(head -3 "$TMP/err")"
[ "$out" = ok ] || fail "printed '$out'"
for k in 1 2 3 4; do
	"$CLI" report --alloc "$TMP/out/p$k.pb.gz" >"$TMP/r$k" ||
		fail "window $k: report failed"
	grep -q ' reseed_a$' "$TMP/r$k" && grep -q ' reseed_b$' "$TMP/r$k" ||
		fail "window $k: no samples of reseed_a and reseed_b: $(cat "$TMP/r$k")"
done
echo PASS
