#!/usr/bin/env bash
# AP_TEST_PRELOAD: inline frames of an optimised build, end to end.
# tests/integration/progs/inline_chain.c, built -O2 -g, mallocs from a
# function inlined twice into another that is itself inlined; it writes
# the frames each malloc's stack must begin with. Run at rate 1 and
# symbolized by `convert --to json` (the per-CU index of
# src/cli/dwindex.c), each malloc's stack must begin with the three-frame
# chain leaf, mid, top: the innermost function at the malloc's line, each
# outer one at the line where the one inside it was inlined (the two
# instances of leaf in mid at their own lines), then main.
. "$(dirname "$0")/preload_smoke_test.sh"
prog="$AP_PROGDIR/inline_chain"
command -v python3 > /dev/null || skip "python3 not installed"

"$CLI" run -q -r 1 --no-symbolize -o "$TMP/p.pb.gz" -- "$prog" "$TMP/expect" ||
  fail "allocprof run inline_chain exited $?"
[ -s "$TMP/expect" ] || fail "the program wrote no expectations"
"$CLI" convert --to json "$TMP/p.pb.gz" -o "$TMP/p.json"
python3 - "$TMP/expect" "$TMP/p.json" "$prog" <<'PY' || fail "stacks differ (above)"
import json, sys
expect, prof, prog = sys.argv[1:]
samples = json.load(open(prof))["samples"]
bad = 0
for line in open(expect):
    words = line.split()[1:]
    size = int(words[0])
    want = [(words[i], int(words[i + 1]), words[i + 2] == "1")
            for i in range(1, len(words), 3)]
    stacks = [s["stack"] for s in samples if s["values"][1] == size]
    if len(stacks) != 1:
        print(f"malloc({size}): {len(stacks)} samples")
        bad += 1
        continue
    mine = [f for f in stacks[0] if f.get("mapping") == prog]
    got = [(f.get("function"), f.get("line"), f.get("inlined")) for f in mine[:len(want)]]
    if got != want:
        print(f"malloc({size}): stack {got}, want {want}")
        bad += 1
    # the chain's frames share one address: the index's answer for it
    if len({f["address"] for f in mine[:3]}) != 1:
        print(f"malloc({size}): the three frames are not one address")
        bad += 1
print(f"{sum(1 for _ in open(expect))} stacks checked")
sys.exit(1 if bad else 0)
PY
echo "ok"
