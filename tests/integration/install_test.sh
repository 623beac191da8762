#!/usr/bin/env bash
# install_test.sh: `cmake --install` into a temporary prefix gives a tree
# other projects can use: a C program builds against the library through
# pkg-config and through find_package(allocprof), and the installed
# `allocprof run` finds the installed runtime even though the prefix is not
# the one configured (a relocated install). AP_TEST_PRELOAD: the last step
# preloads the runtime, and consumers of a sanitizer-built library would need
# the sanitizer flags, so sanitizer builds skip this test.
set -euo pipefail
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ap_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$AP_BINDIR" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "cmake --install failed"; }
for f in bin/allocprof include/allocprof/sampler.h include/allocprof/profile.h \
	 share/man/man1/allocprof.1; do
	[ -e "$tmp/prefix/$f" ] || fail "missing $f"
done
pc=$(find "$tmp/prefix" -name allocprof.pc)
[ -n "$pc" ] || fail "no allocprof.pc installed"
[ -n "$(find "$tmp/prefix" -name liballocprof_preload.so)" ] || fail "no runtime installed"

cat >"$tmp/use.c" <<'C'
#include <allocprof/estimate.h>
#include <allocprof/sampler.h>
#include <stdio.h>
int main(void)
{
	ap_interval iv;
	ap_sampler s;
	ap_sampler_config c;
	ap_sampler_config_default(&c);
	c.seed = 1;
	if (ap_sampler_init(&s, &c) ||
	    ap_nb_interval(8, 10908, 102400, 0.95, false, false, &iv))
		return 1;
	printf("%.0f %.0f\n", iv.lo, iv.hi);
	return 0;
}
C
want="364575 1487779"

# pkg-config (the shared library; rpath because the prefix is private).
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir allocprof)
[ -e "$libdir/liballocprof.so" ] || fail "pkg-config libdir $libdir has no liballocprof.so"
cc -std=c17 "$tmp/use.c" -o "$tmp/use_pc" $(pkg-config --cflags --libs allocprof) \
	-Wl,-rpath,"$libdir" || fail "pkg-config build failed"
[ "$("$tmp/use_pc")" = "$want" ] || fail "pkg-config program printed $("$tmp/use_pc")"

# CMake package.
mkdir "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(use_allocprof C)
find_package(allocprof 0.1 REQUIRED)
add_executable(use_cm ../use.c)
target_link_libraries(use_cm PRIVATE allocprof::allocprof_static)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/cm.log" 2>&1 &&
	cmake --build "$tmp/cm/b" >>"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "find_package build failed"; }
[ "$("$tmp/cm/b/use_cm")" = "$want" ] || fail "find_package program printed the wrong interval"

# The installed command finds the installed runtime (prefix != configured one).
"$tmp/prefix/bin/allocprof" run -q -o "$tmp/p.pb.gz" -- /bin/true ||
	fail "installed allocprof run failed"
[ -s "$tmp/p.pb.gz" ] || fail "installed allocprof run wrote no profile"
echo "install_test: ok"
