#!/usr/bin/env bash
# install_test.sh: `cmake --install` into a temporary prefix gives a tree
# other projects can use: a C program builds against the library through
# pkg-config and through find_package(allocprof) with each exported target
# (allocprof::allocprof, allocprof::allocprof_static, _shared), nothing but
# the command, the runtime, the library, its headers and packaging files and
# the man page is installed (no demo program), and the installed
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
# The installed file list: nothing from demo/ (a development aid, not a
# product) -- and nothing unexpected elsewhere (the docs, which installed
# headers cite by name, go to share/doc/allocprof).
(cd "$tmp/prefix" && find . -type f -o -type l | sed 's|^\./||' | sort) >"$tmp/files"
grep -i demo "$tmp/files" && fail "a demo program is installed"
unexpected=$(grep -Ev '^(bin/allocprof|include/allocprof/[a-z_0-9]+\.h|lib[^/]*/(liballocprof[._].*|pkgconfig/allocprof\.pc|cmake/allocprof/allocprof[A-Za-z-]*\.cmake)|share/man/man1/allocprof\.1|share/doc/allocprof/[A-Za-z_]+\.md)$' "$tmp/files" || true)
[ -z "$unexpected" ] || fail "unexpected installed files: $unexpected"
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

# CMake package: one consumer per exported target (README lists them).
for target in allocprof allocprof_static allocprof_shared; do
	d=$tmp/cm_$target
	mkdir "$d"
	cat >"$d/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(use_allocprof C)
find_package(allocprof 0.1 REQUIRED)
add_executable(use_cm ../use.c)
target_link_libraries(use_cm PRIVATE allocprof::$target)
CM
	cmake -S "$d" -B "$d/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$d.log" 2>&1 &&
		cmake --build "$d/b" >>"$d.log" 2>&1 ||
		{ cat "$d.log"; fail "find_package build with allocprof::$target failed"; }
	[ "$("$d/b/use_cm")" = "$want" ] ||
		fail "find_package program (allocprof::$target) printed the wrong interval"
	# The default is the static library: no liballocprof.so needed.
	if [ "$target" != allocprof_shared ]; then
		ldd "$d/b/use_cm" | grep -q liballocprof &&
			fail "allocprof::$target linked the shared library"
	fi
done

# The installed command finds the installed runtime (prefix != configured one).
"$tmp/prefix/bin/allocprof" run -q -o "$tmp/p.pb.gz" -- /bin/true ||
	fail "installed allocprof run failed"
[ -s "$tmp/p.pb.gz" ] || fail "installed allocprof run wrote no profile"
echo "install_test: ok"
