#!/usr/bin/env bash
# preload_shim_test.sh: the runtime over a wrapper that defines malloc,
# free, calloc and realloc but not posix_memalign: libs/shim_alloc.c
# (LD_PRELOAD="liballocprof_preload.so libap_shim_alloc.so"), and glibc's
# own libmemusage.so, which is one. No emulation of the memalign family can
# be built on such an allocator, so the runtime samples nothing; it must say
# so in one line and pass every call through, so that the program runs
# exactly as under the wrapper alone. Until 2026-11-28 it left the program
# on its 256 KiB bootstrap pool, and any program that allocated more died
# of "out of memory".
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

SHIM=$AP_PROGDIR/libap_shim_alloc.so
[ -r "$SHIM" ] || fail "test library not built: $SHIM"
opts="output=$TMP/p.%p.pb.gz"
said="comes without a posix_memalign of its own: profiling disabled"

# A program that allocates far more than the bootstrap pool holds.
seq 1 400000 | sort -R --random-source=/dev/zero >"$TMP/in.txt"
AP_SHIM_OUT=$TMP/calls LD_PRELOAD="$LIB $SHIM" ALLOCPROF_OPTIONS=$opts \
	sort -n "$TMP/in.txt" >"$TMP/sort.out" 2>"$TMP/sort.err" ||
	fail "sort under runtime + shim exited $? ($(head -3 "$TMP/sort.err"))"
[ "$(tail -1 "$TMP/sort.out")" = 400000 ] || fail "sort's output changed"
[ "$(wc -l <"$TMP/sort.out")" = 400000 ] || fail "sort's output lost lines"
n=$(grep -c -- "$said" "$TMP/sort.err" || true)
[ "$n" = 1 ] || fail "expected the runtime's one line about the shim, got $n: $(cat "$TMP/sort.err")"
# As many calls reach the shim as when it is alone (the runtime's own
# start-up calls come on top).
AP_SHIM_OUT=$TMP/calls_alone LD_PRELOAD="$SHIM" sort -n "$TMP/in.txt" >/dev/null ||
	fail "sort under the shim alone exited $?"
calls=$(sed -n 's/^calls=\([0-9]*\)$/\1/p' "$TMP/calls" 2>/dev/null || true)
alone=$(sed -n 's/^calls=\([0-9]*\)$/\1/p' "$TMP/calls_alone" 2>/dev/null || true)
[ -n "$alone" ] && [ "$alone" -gt 0 ] || fail "the shim counted nothing alone"
[ -n "$calls" ] && [ "$calls" -ge "$alone" ] ||
	fail "the calls did not reach the shim (${calls:-no} calls, $alone alone)"
! ls "$TMP"/p.*.pb.gz >/dev/null 2>&1 || fail "a profile was written with profiling off"

# Every entry point, against the shim alone: the same sites and sizes.
LD_PRELOAD="$SHIM" "$AP_PROGDIR/exact_allocs" >"$TMP/alone.out" 2>/dev/null ||
	fail "exact_allocs under the shim alone exited $?"
LD_PRELOAD="$LIB $SHIM" ALLOCPROF_OPTIONS=$opts \
	"$AP_PROGDIR/exact_allocs" >"$TMP/both.out" 2>"$TMP/both.err" ||
	fail "exact_allocs under runtime + shim exited $? ($(head -3 "$TMP/both.err"))"
grep '^site ' "$TMP/alone.out" >"$TMP/alone.sites"
grep '^site ' "$TMP/both.out" >"$TMP/both.sites"
[ -s "$TMP/alone.sites" ] || fail "exact_allocs printed no sites"
cmp -s "$TMP/alone.sites" "$TMP/both.sites" ||
	fail "exact_allocs' sites differ under the runtime: $(diff "$TMP/alone.sites" "$TMP/both.sites" | head -5)"
grep -q -- "$said" "$TMP/both.err" || fail "no line about the shim for exact_allocs"
# glibc's own libmemusage.so (memusage(1)'s wrapper, part of libc6) is
# such a wrapper: malloc, free, calloc and realloc, no posix_memalign.
memusage=$(for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
	[ -r "$d/libmemusage.so" ] && echo "$d/libmemusage.so" && break; done || true)
if [ -n "$memusage" ]; then
	LD_PRELOAD="$LIB $memusage" ALLOCPROF_OPTIONS=$opts \
		sort -n "$TMP/in.txt" >"$TMP/mu.out" 2>"$TMP/mu.err" ||
		fail "sort under runtime + libmemusage.so exited $? ($(head -3 "$TMP/mu.err"))"
	cmp -s "$TMP/sort.out" "$TMP/mu.out" || fail "sort's output changed under libmemusage.so"
	grep -q -- "$said" "$TMP/mu.err" || fail "no line about libmemusage.so"
else
	echo "libmemusage.so not found: that case not run" >&2
fi
echo "shim: ok ($calls calls through the shim${memusage:+; libmemusage.so too})"
