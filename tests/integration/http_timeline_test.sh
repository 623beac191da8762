#!/usr/bin/env bash
# http_timeline_test.sh: /debug/allocprof/timeline (docs/HTTP.md) in a
# profiled long-running program with timeline=100ms: after a second the
# series holds about ten points in increasing time, each with the process
# totals and sites whose stacks are in the stack table; the bytes are read
# here by an independent decoder of docs/FORMATS.md's layout ("Time
# extensions"), so the documentation is checked too. Without timeline=
# the endpoint answers 404 with a hint. (AP_TEST_PRELOAD: needs the
# runtime; skipped in sanitizer builds.)
. "$(dirname "$0")/http_endpoints_test.sh"
command -v python3 >/dev/null || skip "python3 not installed"

start_prog tl rate=65536,seed=7,timeline=100ms
pid=$PID
sleep 1.2
code=$(fetch /debug/allocprof/timeline "$HTMP/tl.bin" -D "$HTMP/tl.hdr")
[ "$code" = 200 ] || fail "/debug/allocprof/timeline: status $code"
grep -qi '^content-type: application/octet-stream' "$HTMP/tl.hdr" ||
	fail "content type: $(cat "$HTMP/tl.hdr")"
python3 - "$HTMP/tl.bin" <<'PY' || fail "the timeline does not decode as documented"
import struct, sys
b = open(sys.argv[1], "rb").read()
pos = 0
def var():
    global pos
    v = shift = 0
    while True:
        c = b[pos]; pos += 1
        v |= (c & 0x7f) << shift; shift += 7
        if not c & 0x80:
            return v
def dbl():
    global pos
    v = struct.unpack_from("<d", b, pos)[0]; pos += 8
    return v
def sums():
    samples, exact = var(), var()
    vals = [dbl() for _ in range(8)]  # objects space u space_var objects_var usable space_var2 objects_var2
    return samples, vals
assert var() == 1, "version"
period, cadence, cand = var(), var(), var()
mx = dbl()
assert period == 65536 and cadence == 100000000, (period, cadence)
nst = var()
for _ in range(nst):
    d = var()
    assert 1 <= d <= 1024
    for _ in range(d):
        var()
npts = var()
last = -1
for _ in range(npts):
    t = var()
    assert t > last; last = t
    tot, other = sums(), sums()
    assert tot[1][1] > 0, "total live bytes"
    assert tot[1][1] <= mx * (1 + 1e-9), "a point above the running maximum"
    n = var()
    assert n <= 16
    listed = 0.0
    for _ in range(n):
        k, rate = var(), var()
        assert k < nst
        s = sums(); listed += s[1][1]
    assert abs(listed + other[1][1] - tot[1][1]) <= 1e-6 * tot[1][1] + 1
assert pos == len(b), "trailing bytes"
assert 6 <= npts <= 257, f"{npts} points after 1.2 s at 100 ms"
print(f"{npts} points, {nst} stacks")
PY
stop_prog tl "$pid"

start_prog off rate=65536,seed=7
pid=$PID
code=$(fetch /debug/allocprof/timeline "$HTMP/off.txt")
[ "$code" = 404 ] || fail "timeline off: status $code, want 404"
grep -q "timeline=" "$HTMP/off.txt" || fail "timeline off: no hint: $(cat "$HTMP/off.txt")"
stop_prog off "$pid"
echo ok
