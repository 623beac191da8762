#!/usr/bin/env bash
# preload_realloc_growth_test.sh: growing a sampled block by realloc must
# cost amortised O(1) per byte. realloc_growth grows a buffer from 1 MiB to
# 8 MiB in 4 KiB steps (1792 reallocs) and counts the bytes held at each
# move of the block. At rate=65536 every step is sampled (probability
# 1 - exp(-16) for 1 MiB), so the block lives in the runtime's range; a
# block that moves only when it outgrows a run twice its size moves at
# 2, 4 (and 8) MiB, copying under 2 x final bytes in all. The bound checked,
# 2 x final, is the doubling argument's: the moves copy 1 + 2 + 4 MiB here.
# The old behaviour (a copy on every step) moves 1792 times, ~8 GB.
# Deterministic: the count depends on the runtime's placement only.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

prog=$AP_PROGDIR/realloc_growth
mkdir -p "$TMP/prof"
st=0
bounded 120 env LD_PRELOAD="$LIB" \
	ALLOCPROF_OPTIONS="rate=65536,seed=5,output=$TMP/prof/p.%p.pb.gz" \
	"$prog" >"$TMP/out" 2>&1 || st=$?
[ "$st" = 0 ] || fail "realloc_growth: exit status $st: $(tail -3 "$TMP/out")"
read -r _ moves _ moved _ final <"$TMP/out"
echo "moves $moves, bytes moved $moved, final $final" >&2
[ "$moved" -le $((2 * final)) ] ||
	fail "a growing sampled block was copied $moves times ($moved bytes for a $final-byte buffer)"
check_profiles realloc_growth "$TMP/prof"
echo "realloc growth: ok"
