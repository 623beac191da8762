#!/usr/bin/env bash
# preload_memory_test.sh: what distinct stacks cost in resident memory at
# rate=1. The stack table itself costs about 800 bytes per stack (of ~20
# frames); a dump needs about as much again while it builds the profile,
# and that must go back afterwards (before the fix it stayed resident on
# the arena's free lists: 1.8 KB per stack after the first dump).
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

d=15 # 32768 stacks: the table alone is about 26 MB
bounded 120 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,dump_at_exit=0,dump_on=none" \
	"$AP_PROGDIR/many_stacks" $d "$TMP/m.pb.gz" >"$TMP/out" 2>"$TMP/err" ||
	fail "many_stacks failed: $(cat "$TMP/err")"
read -r _ r0 r1 r2 <"$TMP/out"
check_readable "$TMP/m.pb.gz"
table=$((r1 - r0))
after=$((r2 - r0))
echo "stacks $((1 << d)): table $((table * 1024 >> d)) B/stack, after a dump $((after * 1024 >> d)) B/stack" >&2
[ "$table" -gt 0 ] || fail "no table growth measured ($r0 -> $r1 kB)"
# The dump may leave a little (the encoder's last buffer size class,
# page rounding): at most a quarter of the table's own cost.
[ $((after * 4)) -le $((table * 5)) ] ||
	fail "a dump left $((after - table)) kB resident on top of the table's $table kB"
echo "memory: ok"
