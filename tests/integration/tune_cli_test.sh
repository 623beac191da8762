#!/usr/bin/env bash
# tune_cli_test.sh: `allocprof tune` end to end (AP_TEST_PRELOAD: trains on
# a real program's rate-1 profile and runs the program under the table).
#  - tune prints the table and the predicted variance per view, writes a
#    table the runtime accepts, and answers --json and --advise;
#  - bad usage and bad input keep the CLI rule (cli_expect.sh);
#  - the runtime with sample_table= runs the program with unchanged
#    output and writes a profile whose report carries intervals;
#  - a missing or bad table costs exactly one stderr line naming
#    sample_table=, and the program runs as before.
# (Exactness through a thinning table is checked in run_exact_test.c.)
. "$(dirname "$0")/preload_smoke_test.sh"
. "$(dirname "$0")/cli_expect.sh"
EXPECT_DIR=$TMP
PROG=$AP_PROGDIR/exact_allocs

sites() { grep '^site ' "$1"; }

"$CLI" run -q -r 1 -o "$TMP/train.pb.gz" -- "$PROG" > "$TMP/plain.out" ||
	fail "training run failed"
expect_status 0 "$CLI" tune -o "$TMP/t.tab" "$TMP/train.pb.gz"
grep -q '^predicted variance' "$EXPECT_DIR/out" || fail "no variance summary: $(cat "$EXPECT_DIR/out")"
for v in alloc inuse objects; do
	grep -q "^  $v " "$EXPECT_DIR/out" || fail "no $v line in the summary"
done
grep -q '^allocprof-sample-table 1$' "$TMP/t.tab" || fail "table lacks its header"
grep -q '^base [0-9][0-9]*$' "$TMP/t.tab" || fail "table lacks its base rate"
grep -q '^class [0-9][0-9]* [0-9][0-9]*' "$TMP/t.tab" || fail "table has no class"

expect_status 0 "$CLI" tune --objective inuse --json "$TMP/train.pb.gz"
if command -v python3 > /dev/null; then
	python3 - "$EXPECT_DIR/out" <<'PY' || fail "tune --json: bad JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["objective"] == "inuse" and d["classes"], d
for v in ("alloc", "inuse", "objects"):
    assert d["variance"][v]["table"] >= 0
assert all(c["rate"] >= d["base_rate"] for c in d["classes"])
PY
fi
expect_status 0 "$CLI" tune --advise --precision 10% "$TMP/train.pb.gz"
grep -q '^rate=[0-9]' "$EXPECT_DIR/out" || fail "advise: $(cat "$EXPECT_DIR/out")"
expect_status 0 "$CLI" tune --advise --json "$TMP/train.pb.gz"
grep -q '"overhead_pct"' "$EXPECT_DIR/out" || fail "advise --json: $(cat "$EXPECT_DIR/out")"

# Usage and input errors.
expect_status 1 "$CLI" tune
expect_status 1 "$CLI" tune --objective speed "$TMP/train.pb.gz"
expect_status 1 "$CLI" tune --budget 10 --overhead 1% "$TMP/train.pb.gz"
expect_status 1 "$CLI" tune --floor 0.5 "$TMP/train.pb.gz"
expect_status 1 "$CLI" tune --base-rate 100000000 "$TMP/train.pb.gz"
expect_status 2 "$CLI" tune "$TMP/missing.pb.gz"
printf 'not a profile' > "$TMP/junk"
expect_status 2 "$CLI" tune "$TMP/junk"

# The runtime under the table: same program output, a readable profile
# at the table's base rate, with intervals.
base=$(sed -n 's/^base //p' "$TMP/t.tab")
"$CLI" run -q -e "sample_table=$TMP/t.tab" -e seed=3 -o "$TMP/s.pb.gz" -- "$PROG" \
	> "$TMP/table.out" 2> "$TMP/table.err" || fail "run under the table failed"
[ ! -s "$TMP/table.err" ] || fail "stderr under the table: $(cat "$TMP/table.err")"
diff <(sites "$TMP/plain.out") <(sites "$TMP/table.out") > /dev/null ||
	fail "program output changed under the table"
expect_status 0 "$CLI" report --alloc "$TMP/s.pb.gz"
grep -q "sampling rate $base bytes" "$EXPECT_DIR/out" ||
	fail "report does not show the base rate $base: $(head -1 "$EXPECT_DIR/out")"
grep -q ' \[[0-9.]* [KMG]*i*B*, ' "$EXPECT_DIR/out" || fail "report has no intervals"

# Missing and bad tables: one line, then sampling at rate= as before.
printf 'allocprof-sample-table 9\nbase 8\n' > "$TMP/bad.tab"
for t in "$TMP/none.tab" "$TMP/bad.tab"; do
	"$CLI" run -q -e "sample_table=$t" -o "$TMP/b.pb.gz" -- "$PROG" \
		> "$TMP/bad.out" 2> "$TMP/bad.err" || fail "run with $t failed"
	[ "$(wc -l < "$TMP/bad.err")" = 1 ] && grep -q "sample_table=$t" "$TMP/bad.err" ||
		fail "$t: want one line naming sample_table=, got: $(cat "$TMP/bad.err")"
	diff <(sites "$TMP/plain.out") <(sites "$TMP/bad.out") > /dev/null ||
		fail "program output changed with $t"
	check_readable "$TMP/b.pb.gz"
done
grep -q 'unsupported version' "$TMP/bad.err" || fail "bad table: $(cat "$TMP/bad.err")"
echo "ok: tune trains, writes a table the runtime uses; bad tables cost one line"
