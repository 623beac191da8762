#!/usr/bin/env bash
# wrapper_hint_test.sh: `report` by function points at the program's own
# allocation wrapper. wrapper_sites allocates through xalloc_bytes from two
# callers: at rate=1 the report names the wrapper in a hint with the --skip
# that charges its callers, and that --skip gives the callers' exact bytes
# and no hint. A function named like an allocator with one caller
# (pool_alloc_block) and one with two callers not named so (index_rows)
# are not named; --json and --by line carry no hint. (AP_TEST_PRELOAD:
# needs the runtime; skipped in sanitizer builds.)
. "$(dirname "$0")/preload_smoke_test.sh"

bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,output=$TMP/w.pb.gz" \
	"$AP_PROGDIR/wrapper_sites" || fail "wrapper_sites failed"
"$CLI" report --alloc "$TMP/w.pb.gz" >"$TMP/rep" 2>&1 || fail "report: $(cat "$TMP/rep")"
want="hint: xalloc_bytes is called from several functions, as allocation wrappers are; --skip '^(xalloc_bytes)\$' charges its callers instead"
[ "$(grep '^hint:' "$TMP/rep")" = "$want" ] || fail "want the line '$want' in: $(cat "$TMP/rep")"

# row FUNCTION: the exact bytes of FUNCTION's row (rate=1: no sampling error)
row() {
	"$CLI" report --alloc --json "$@" >"$TMP/row.json" || fail "report --json $*"
	grep -o "\"name\":\"$FN\",[^}]*" "$TMP/row.json" | sed -n 's/.*"bytes":\([0-9]*\).*/\1/p'
}
"$CLI" report --alloc --skip '^(xalloc_bytes)$' "$TMP/w.pb.gz" >"$TMP/skip" 2>&1 || fail "report --skip: $(cat "$TMP/skip")"
! grep -q '^hint:' "$TMP/skip" || fail "a hint once the wrapper is skipped: $(cat "$TMP/skip")"
for pair in load_table:1000000 parse_input:1000000 pool_alloc_block:1000000 index_rows:300000; do
	FN=${pair%%:*}
	got=$(row --skip '^(xalloc_bytes)$' "$TMP/w.pb.gz")
	[ "$got" = "${pair#*:}" ] || fail "$FN: want ${pair#*:} bytes with the wrapper skipped, got '$got': $(cat "$TMP/skip")"
done
"$CLI" report --alloc --json "$TMP/w.pb.gz" >"$TMP/json" || fail "report --json failed"
"$CLI" report --alloc --by line "$TMP/w.pb.gz" >"$TMP/line" || fail "report --by line failed"
! grep -q 'hint' "$TMP/json" || fail "a hint in --json"
! grep -q '^hint:' "$TMP/line" || fail "a hint --by line: $(cat "$TMP/line")"
echo "wrapper hint: ok"
