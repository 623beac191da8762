#!/usr/bin/env bash
# attach_runpath_test.sh: while the runtime is attached (its hook in front
# of dlopen), a bare name is still looked up in the calling program's
# DT_RUNPATH ($ORIGIN/lib), as glibc does for the real caller.
# (AP_TEST_PRELOAD: needs the runtime; skipped in sanitizer builds.)
set -euo pipefail
. "$(dirname "$0")/preload_smoke_test.sh"
SRC=$AP_SRCDIR/tests/integration/progs/attach_inproc.c
z=$(lib_path libz.so.1)
[ -n "$z" ] || skip "libz.so.1 is not installed"
command -v cc >/dev/null || skip "no C compiler"
mkdir -p "$TMP/app/lib"
cp "$z" "$TMP/app/lib/libapz.so"
cc -o "$TMP/app/prog" "$SRC" -ldl -Wl,-rpath,'$ORIGIN/lib' -Wl,--enable-new-dtags ||
	fail "cannot build $SRC"
out=$("$TMP/app/prog" "$LIB" "rate=4096,dump_at_exit=0" libapz.so) ||
	fail "dlopen through the hook: $out"
[ "$out" = loaded ] || fail "printed '$out'"
echo PASS
