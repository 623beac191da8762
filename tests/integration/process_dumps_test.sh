#!/usr/bin/env bash
# process_dumps_test.sh: several dumps of one process (issue 12, item 2).
# Dumps are cumulative, so report and merge of all of them must use the
# latest dump of each process, and say so in one line on stderr; a dump
# carries its process's identity (pid, start, boot id, sequence). Two
# processes' latest dumps still add up.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

run() { # run SEED: usable16 dumping every MiB allocated, into $TMP/SEED
	mkdir -p "$TMP/$1"
	bounded 60 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=65536,seed=$1,every_bytes=1048576,output=$TMP/$1/p.%p.%n.pb.gz" \
		"$AP_PROGDIR/usable16" || fail "usable16 failed"
}
run 1
run 2
n=$(count_files "$TMP/1/p.*.pb.gz")
[ "$n" -ge 3 ] || fail "want several dumps of one process, got $n"
last=$(ls "$TMP"/1/p.*.pb.gz | sort -t. -k3,3n | tail -1)
total() { python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["bytes"])'; }

"$CLI" report --alloc --json "$last" | total > "$TMP/want"
"$CLI" report --alloc --json "$TMP"/1/p.*.pb.gz 2> "$TMP/err" | total > "$TMP/got"
cmp -s "$TMP/want" "$TMP/got" ||
	fail "report of every dump: $(cat "$TMP/got") bytes, the latest dump alone $(cat "$TMP/want")"
[ "$(wc -l < "$TMP/err")" = 1 ] && grep -q "using the latest dump of each of 1 process" "$TMP/err" ||
	fail "no one-line notice: $(cat "$TMP/err")"

# merge: the same selection; the merged file is no single process's dump
"$CLI" merge -o "$TMP/m.pb.gz" "$TMP"/1/p.*.pb.gz 2> "$TMP/err" || fail "merge failed"
grep -q "latest dump" "$TMP/err" || fail "merge says nothing"
"$CLI" report --alloc --json "$TMP/m.pb.gz" | total > "$TMP/got"
cmp -s "$TMP/want" "$TMP/got" || fail "merge of every dump counts early samples again"

# two processes: the latest dump of each, added
last2=$(ls "$TMP"/2/p.*.pb.gz | sort -t. -k3,3n | tail -1)
"$CLI" report --alloc --json "$last" "$last2" | total > "$TMP/want2"
"$CLI" report --alloc --json "$TMP"/1/p.*.pb.gz "$TMP"/2/p.*.pb.gz 2> "$TMP/err" | total > "$TMP/got2"
cmp -s "$TMP/want2" "$TMP/got2" || fail "two processes: $(cat "$TMP/got2") vs $(cat "$TMP/want2")"
grep -q "each of 2 processes" "$TMP/err" || fail "two processes: $(cat "$TMP/err")"

# diff between two dumps of one process: the exact delta. The change is
# the later total minus the earlier (the shared samples cancel line by
# line), its samples only those in between, its interval that of the
# delta row; an in-use comparison is refused (shared, not independent).
first=$(ls "$TMP"/1/p.*.pb.gz | sort -t. -k3,3n | head -1)
"$CLI" report --alloc --json "$first" > "$TMP/f.json"
"$CLI" report --alloc --json "$last" > "$TMP/l.json"
"$CLI" diff --alloc --json "$first" "$last" > "$TMP/d.json" || fail "diff of two dumps failed"
python3 - "$TMP/f.json" "$TMP/l.json" "$TMP/d.json" <<'PY' || fail "diff of two dumps is not their exact delta"
import json, sys
f, l, d = (json.load(open(x)) for x in sys.argv[1:4])
t = d["total"]
assert d["delta"] is True and t["method"] == "delta", d
assert t["change"] == l["total"]["bytes"] - f["total"]["bytes"], (t, f["total"], l["total"])
assert t["new"]["samples"] == l["total"]["samples"] - f["total"]["samples"], t
assert t["change_lo"] <= t["change"] <= t["change_hi"], t
# the interval is that of the samples in between, narrower than the later dump's own
assert t["change_hi"] - t["change_lo"] < l["total"]["bytes_hi"] - l["total"]["bytes_lo"], (t, l["total"])
PY
rc=0; "$CLI" diff --inuse "$first" "$last" 2> "$TMP/err" || rc=$?
[ $rc = 1 ] && grep -q "dumps of one process" "$TMP/err" || fail "in-use diff of two dumps not refused"

# flame --base between two dumps: a plain graph of the delta
"$CLI" flame --alloc --base "$first" "$last" > "$TMP/d.svg" || fail "flame --base of two dumps failed"
grep -q "Allocated between dumps" "$TMP/d.svg" || fail "flame --base of two dumps is not the delta"

# the identity is in the profile, as a comment
"$CLI" convert --to json "$last" 2>/dev/null | grep -q 'allocprof.process=pid=[0-9]*;start=[0-9]*;boot=[-0-9a-f]*;seq=[0-9]*' ||
	fail "no process identity in the dump"
echo "PASS: the latest dump of each process"
