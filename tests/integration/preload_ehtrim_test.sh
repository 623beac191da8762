#!/usr/bin/env bash
# preload_ehtrim_test.sh: the pages of unwind tables that the libunwind
# unwinder reads are given back (src/preload/ehtrim.h). Every lookup made
# the pages it read resident for good: clang, whose libLLVM and
# libclang-cpp carry 10 MiB of unwind tables, grew by 4 MiB of peak RSS
# from them at the default rate (6.9 MiB over the runtime's fixed cost).
#
# progs/eh_pages calls 8192 functions built without frame pointers, each
# allocating once; at rate 1 each is looked up (twice: its frame-pointer
# check and its step). Then it calls the 256 of its library (libs/eh_lib.c),
# whose 512 lookups read that library's tables, not the program's. Then it
# sleeps for longer than the runtime's gap between two trims (50 ms: a trim
# it held back is then made by its dumper thread), and counts the resident
# pages of its own unwind tables. With the argument dump, it asks for a
# profile right after its own lookups instead, then counts.
# Untrimmed (unwind_trim=0) every page is resident (the test's premise: the
# lookups read them all). Trimmed, the pages left are those no trim gives
# back or that the program's own reads bring in: the partial pages at both
# ends of the tables (shared with .rodata) and what the kernel maps around
# the program's reads of .rodata in the same segment (fault-around: at most
# 64 KiB of cached pages around a fault). The test allows 16 pages, one
# such window; seen: 2 of 65. Alone, the program has 2 to 27 resident, as
# the kernel's fault-around goes. Twice: linked by GNU ld (.eh_frame after
# its header) and, where ld.gold is installed, by gold (before it).
# (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/preload_smoke_test.sh"

pages() { # pages OUTFILE: "RESIDENT TOTAL"
	sed -n 's/^eh_pages \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$1"
}
[ -x "$AP_PROGDIR/eh_pages" ] || fail "not built: $AP_PROGDIR/eh_pages"
progs=eh_pages
if [ -x "$AP_PROGDIR/eh_pages_gold" ]; then
	progs="$progs eh_pages_gold"
else
	echo "note: no ld.gold: the layout with .eh_frame before its header is not tested"
fi
for name in $progs; do
	PROG=$AP_PROGDIR/$name
	bounded 60 "$PROG" >"$TMP/$name.alone" 2>&1 || fail "$name: fails alone: $(cat "$TMP/$name.alone")"
	read -r alone total < <(pages "$TMP/$name.alone")
	[ -n "$total" ] || fail "$name: alone: printed $(cat "$TMP/$name.alone")"
	[ "$total" -ge 60 ] || fail "$name: only $total pages of unwind tables: the test needs more"
	for trim in 1 0; do
		mkdir -p "$TMP/$name.t$trim"
		bounded 120 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=1,unwind_trim=$trim,verbose=1,output=$TMP/$name.t$trim/p.%p.pb.gz" \
			"$PROG" >"$TMP/$name.out$trim" 2>"$TMP/$name.err$trim" ||
			fail "$name: unwind_trim=$trim: status $?: $(head -3 "$TMP/$name.err$trim")"
		read -r "res$trim" _ < <(pages "$TMP/$name.out$trim")
		check_profiles "unwind_trim=$trim" "$TMP/$name.t$trim"
	done
	# shellcheck disable=SC2154 # res0 and res1 are read above
	[ "$res0" -ge $((total - 2)) ] ||
		fail "$name: untrimmed: $res0 of $total pages resident; every page was read (the test's premise)"
	trims=$(sed -n 's/.* unwind_trims=\([0-9]*\) .*/\1/p' "$TMP/$name.err1")
	# 2 x (8192 + 256) lookups: a trim at the 32nd, then at most one per
	# 50 ms, the last held back until the program sleeps
	[ "${trims:-0}" -ge 2 ] || fail "$name: unwind_trims=$trims, want at least 2"
	grep -q 'unwind_trims=0 ' "$TMP/$name.err0" || fail "$name: unwind_trim=0 trimmed: $(grep -o 'unwind_trims=[0-9]*' "$TMP/$name.err0")"
	# shellcheck disable=SC2154
	[ "$res1" -le 16 ] || fail "$name: trimmed: $res1 of $total pages resident, want at most 16 (alone $alone, untrimmed $res0)"
	given=$(sed -n 's/.* unwind_trim_kib=\([0-9]*\).*/\1/p' "$TMP/$name.err1")
	# each of the program's pages was given back at least once
	[ "${given:-0}" -ge $(((total - 2) * 4)) ] || fail "$name: unwind_trim_kib=$given, want at least $(((total - 2) * 4))"
	grep -q 'unwind_trim_kib=0$' "$TMP/$name.err0" || fail "$name: unwind_trim=0 gave back pages: $(grep -o 'unwind_trim_kib=[0-9]*' "$TMP/$name.err0")"
	# A dump trims first, however recent the last trim: its transient
	# memory then replaces the table pages instead of adding to them (the
	# dump at exit is often at the program's peak). No dumper thread
	# (dump_on=none), so no held-back trim is made meanwhile; the dump
	# follows the program's lookups at once. Before: 65 of 65 resident.
	mkdir -p "$TMP/$name.dump"
	bounded 120 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=1,dump_on=none,output=$TMP/$name.dump/p.%p.pb.gz" \
		"$PROG" dump >"$TMP/$name.outd" 2>"$TMP/$name.errd" ||
		fail "$name dump: status $?: $(head -3 "$TMP/$name.errd")"
	read -r resd _ < <(pages "$TMP/$name.outd")
	[ "${resd:-99}" -le 16 ] || fail "$name dump: $resd of $total pages resident after a dump, want at most 16"
	check_profiles "dump" "$TMP/$name.dump"
	echo "$name ok: unwind-table pages resident: alone $alone, trimmed $res1, untrimmed $res0, after a dump $resd (of $total); $trims trims"
done
