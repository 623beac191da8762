#!/usr/bin/env bash
# timeline_ring_leaks_test.sh: `allocprof leaks` and `allocprof timeline`
# read one profile written with timeline= (no interval dumps) as the
# series of its timeline ring (issue 15: the ring and the series joined).
# AP_TEST_PRELOAD: needs the runtime.
#
# leak_mix (progs/leak_mix.c, the workload of timeline_leaks_test.sh: a
# leak of 1 MiB/s, a cache that grows to 30 MiB over 8 s and stays, a
# cycling pool, churn) runs 20 s at rate=65536 with timeline=200ms and
# only its exit dump. The ring then holds about 100 points (the runtime
# thins it only beyond its capacity). The verdict rests on the same
# numbers as with dumps: over the later half (10 s) the leak adds 10 MiB,
# about 160 sampled blocks, so its rate has a standard error near 8% and
# a t statistic near 10; the other sites are flat there. Denser points do
# not change the rate estimate (end minus start over the span); they give
# the random-walk variance more increments. Two seeds run side by side.
. "$(dirname "$0")/leak_mix_common.sh"

seeds="21 22"
run_leak_mix "$seeds" timeline=200ms

for s in $seeds; do
	n=$(count_files "$TMP/$s/p.*.pb.gz")
	[ "$n" -eq 1 ] || fail "seed $s: $n profiles, expected only the exit dump"
	f=$(ls "$TMP/$s"/p.*.pb.gz)
	"$CLI" leaks --json "$f" > "$TMP/$s.json" 2> "$TMP/$s.err" ||
		fail "seed $s: leaks failed: $(cat "$TMP/$s.err")"
	grep -q "using the timeline ring of" "$TMP/$s.err" ||
		fail "seed $s: the source was not named: $(cat "$TMP/$s.err")"
	# the ring's size as the loader read it
	ring=$(sed -n 's/.*timeline ring of .* (\([0-9]*\) points.*/\1/p' "$TMP/$s.err")
	[ -n "$ring" ] && [ "$ring" -ge 80 ] && [ "$ring" -le 101 ] ||
		fail "seed $s: ring of '$ring' points, expected about 100 (20 s at 200 ms)"
	r=$(python3 - "$TMP/$s.json" "$ring" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["points"] == int(sys.argv[2]), (d["points"], sys.argv[2])
sites = {s["function"]: s for s in d["sites"]}
for name in ("leak_step", "cache_fill", "pool_cycle", "churn_step"):
    assert name in sites, (name, sorted(sites))
leak = sites["leak_step"]
assert leak["leak"] is True, leak
flagged = [s["function"] for s in d["sites"] if s["leak"]]
assert flagged == ["leak_step"], flagged
print("%.0f [%.0f, %.0f] q=%.2g" % (leak["rate"], leak["rate_lo"], leak["rate_hi"], leak["q"]))
PY
) || fail "seed $s: verdicts (above): $("$CLI" leaks "$f" 2>&1)"
	echo "seed $s: $ring ring points; leak rate $r B/s (true 1048576)"
	"$CLI" timeline --json "$f" > "$TMP/$s.tl.json" 2> "$TMP/$s.tl.err" ||
		fail "seed $s: timeline failed: $(cat "$TMP/$s.tl.err")"
	python3 - "$TMP/$s.tl.json" "$ring" <<'PY' || fail "seed $s: timeline points (above)"
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert d["points"] == n, (d["points"], n)
t = d["times"]
assert len(t) == n and all(b > a for a, b in zip(t, t[1:])), t
assert 18 <= t[-1] <= 21, t[-1]
PY
	"$CLI" timeline "$f" > "$TMP/$s.svg" 2> /dev/null || fail "seed $s: timeline SVG failed"
	if command -v xmllint > /dev/null; then
		xmllint --noout "$TMP/$s.svg" || fail "seed $s: SVG not well-formed"
	fi
done
echo "PASS: one profile's timeline ring read as the series; the leak flagged, nothing else"
