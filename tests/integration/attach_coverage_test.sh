#!/usr/bin/env bash
# attach_coverage_test.sh: at a sampled rate, the intervals of an attached
# profile cover what the program allocated during the window at their
# nominal rate. progs/attach_target runs without the runtime; W times on
# the same process: attach at -r 65536 with a seed of its own, open the
# program's counting window, close it, detach; then compare the bytes interval of window_c and
# window_cxx (`report --alloc --json`, bytes_lo..bytes_hi) with the bytes
# the program counted in them.
# First, that seed= reaches a later attach at all (progs/attach_inproc
# --reseed: the same allocations in four in-process windows seeded 1, 5, 6, 5;
# windows 2 and 4 must be sampled alike, 3 not).
# (AP_TEST_PRELOAD: needs the runtime; skipped in sanitizer builds.)
#
# The window the program counts is inside the window the runtime samples:
# the test opens it (DIR/window) only after `attach --no-wait` returned,
# when sampling is on, and detaches only after the program wrote its counts
# (DIR/window.done). window_c and window_cxx allocate only while the window
# is open, so a site's true bytes in the profile's window is exactly the
# program's count.
#
# Numbers. W = 40 windows of ~0.6 s, 2 sites each: N = 80 intervals.
# The main thread makes ~7000 window_c (100 B) and window_cxx (200 B)
# allocations a second, so a window has ~6 and ~13 samples expected at
# rate 65536: enough that a site is almost never unsampled (a site missing
# from a profile counts as not covered, which can only make the test fail
# more easily). Windows use distinct seeds (-e seed=); the two sites of a
# window are sampled by one thread's gaps, practically independent.
# - 95% intervals: covered ~ Binomial(80, >= 0.95) when they are right
#   (allocprof's intervals are exact negative binomial ones, conservative
#   by construction: docs/STATISTICS.md). Fail if covered < 69:
#   P(Binomial(80, 0.95) < 69) = 0.0006. The test is for intervals too
#   narrow or off-centre: at a true coverage of 0.85 it fails with
#   probability 0.55.
# - 50% intervals from the same profiles: fail if covered < 25, P = 0.0002
#   for Binomial(80, 0.5). Being conservative, they cover more than half
#   (about 3/4 here with ~10 samples an interval), so no upper bound; a
#   biased estimate (an interval shifted off the truth) fails it.
# - Bias over all windows: the point estimates' sum against the counted
#   bytes' sum B. Sampling is a Poisson process of rate 1/R per byte, so
#   the estimate (samples x R, give or take R per sample) has variance
#   ~R*B; fail if |sum - B| > 3.29 sqrt(R*B) (two-sided P = 0.001); with
#   ~800 samples in all that is ~12% of B.
. "$(dirname "$0")/attach_common.sh"

# sites FILE.pb.gz: each reseed_ site's samples and bytes, one per line.
sites() {
	"$CLI" report --alloc --json "$1" | python3 -c '
import json, sys
for x in json.load(sys.stdin)["sites"]:
    if x["function"].startswith("reseed_"):
        print(x["function"], x["samples"], x["bytes"])' | sort
}
RS=$AP_PROGDIR/attach_inproc
[ -x "$RS" ] || fail "test program not built: $RS"
mkdir -p "$TMP/rs"
[ "$("$RS" "$LIB" --reseed "$TMP/rs")" = ok ] || fail "attach_inproc --reseed failed"
for k in 1 2 3 4; do sites "$TMP/rs/p$k.pb.gz" >"$TMP/rs/$k"; done
[ "$(wc -l <"$TMP/rs/2")" = 2 ] || fail "reseed: sites: $(cat "$TMP/rs/2")"
cmp -s "$TMP/rs/2" "$TMP/rs/4" ||
	fail "seed=5 twice sampled differently: $(cat "$TMP/rs/2") vs $(cat "$TMP/rs/4")"
# ~1100 samples of sizes 64..1060: equal by chance has no real probability
! cmp -s "$TMP/rs/2" "$TMP/rs/3" || fail "seed=5 and seed=6 sampled alike"

W=40
D=$TMP/t
mkdir -p "$D"
# not under timeout(1): $! must be the target itself
"$PROG" "$D" >"$TMP/out" 2>"$TMP/err" </dev/null &
pid=$!
cleanup() {
	kill -KILL "$pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
sleep 0.3
kill -0 "$pid" 2>/dev/null || fail "target exited early: $(cat "$TMP/err")"

# wait_for TEST: up to 10 s for the condition.
wait_for() {
	for _ in $(seq 200); do
		test "$@" && return 0
		sleep 0.05
	done
	fail "timed out waiting for: test $*"
}

reports=()
for i in $(seq "$W"); do
	"$CLI" attach --no-wait -q -r 65536 -e seed=$((7000 + i)) \
		-o "$TMP/w$i.%n.pb.gz" "$pid" || fail "window $i: attach failed"
	touch "$D/window"
	sleep 0.6
	touch "$D/window.end"
	wait_for -e "$D/window.done"
	"$CLI" detach "$pid" 2>"$TMP/detach" || fail "window $i: detach: $(cat "$TMP/detach")"
	cp "$D/counts" "$TMP/w$i.counts"
	# reports in the background, during the next window (wall time)
	prof=$(ls "$TMP/w$i".*.pb.gz)
	{ "$CLI" report --alloc --json "$prof" >"$TMP/w$i.95.json" &&
		"$CLI" report --alloc --json --level 0.5 "$prof" >"$TMP/w$i.50.json"; } &
	reports+=($!)
	# the next window: files gone, the program's counts restarted
	rm -f "$D/window.end" "$D/window"
	wait_for ! -e "$D/window.done"
done
for r in "${reports[@]}"; do wait "$r" || fail "a report failed"; done
touch "$D/stop"
st=0
wait "$pid" || st=$?
[ "$st" = 0 ] || [ "$st" = 77 ] || fail "target exit $st: $(cat "$TMP/err")"
[ "$(cat "$TMP/out")" = "threads 3 errors 0" ] || fail "target output: $(cat "$TMP/out")"

python3 - "$TMP" "$W" <<'EOF' || fail "coverage (above)"
import json, sys
tmp, w = sys.argv[1], int(sys.argv[2])
cov = {"95": 0, "50": 0}
n = samples = 0
est = truth = 0.0
for i in range(1, w + 1):
    want = {}
    for line in open("%s/w%d.counts" % (tmp, i)):
        k, o, b = line.split()
        want[k] = int(b)
    for lvl in cov:
        r = json.load(open("%s/w%d.%s.json" % (tmp, i, lvl)))
        for k, fn in (("c", "window_c"), ("cxx", "window_cxx")):
            if want[k] == 0:
                sys.exit("window %d: the program counted nothing in %s" % (i, fn))
            s = [x for x in r["sites"] if x["function"].split("(")[0] == fn]
            if len(s) > 1:
                sys.exit("window %d: %d rows for %s" % (i, len(s), fn))
            ok = bool(s) and s[0]["bytes_lo"] <= want[k] <= s[0]["bytes_hi"]
            cov[lvl] += ok
            if lvl == "95":
                n += 1
                samples += s[0]["samples"] if s else 0
                est += s[0]["bytes"] if s else 0
                truth += want[k]
z = (est - truth) / (65536 * truth) ** 0.5
print("intervals %d, mean samples %.1f, covered: 95%% %d, 50%% %d; "
      "bytes estimated/counted %.4f (z %.2f)"
      % (n, samples / n, cov["95"], cov["50"], est / truth, z))
if n != 80:
    sys.exit("expected 80 intervals, got %d" % n)
if cov["95"] < 69:
    sys.exit("95%% intervals: %d of %d covered, < 69" % (cov["95"], n))
if cov["50"] < 25:
    sys.exit("50%% intervals: %d of %d covered, < 25" % (cov["50"], n))
if abs(z) > 3.29:
    sys.exit("estimates biased: sum %.0f, counted %.0f, z %.2f" % (est, truth, z))
EOF
echo PASS
