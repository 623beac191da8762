#!/usr/bin/env bash
# preload_libm_test.sh: the runtime does not need libm (src/preload/
# interpose_libm.c). Its shared object has no DT_NEEDED entry for it, so a
# program that does not use libm (http_workload links libc alone) runs
# under the runtime without libm mapped: the sampler and the dumps use
# liballocprof's own log, log1p and expm1. The interval bounds on /metrics
# need libm's special functions: the first scrape opens it with dlopen,
# and the bounds it serves are finite and hold the estimate.
# (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/http_endpoints_test.sh"

command -v readelf >/dev/null || skip "readelf (binutils) is not installed"

needed=$(readelf -d "$HLIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
[ -n "$needed" ] || fail "no NEEDED entries read from $HLIB"
case " $needed" in
*" libm.so"*) fail "the runtime needs libm: $needed" ;;
esac
echo "runtime needs: $needed"

readelf -d "$HPROG" | grep -q 'libm\.so' && fail "http_workload links libm: the test needs a program that does not"

# maps_have_libm PID: whether libm is mapped in the process.
maps_have_libm() {
	grep -q '/libm\.so' "/proc/$1/maps"
}

start_prog nolibm rate=65536,seed=7
# PID is timeout's; env execs the program, timeout's only child.
prog=$(pgrep -P "$PID" | head -1)
[ -n "$prog" ] || fail "no program process under timeout $PID"
# Let it sample for a while (a log for every gap draw) and serve a heap
# profile (the profile writers), then look.
sleep 1
code=$(fetch /debug/pprof/heap "$HTMP/h.pb.gz")
[ "$code" = 200 ] || fail "/debug/pprof/heap: status $code"
maps_have_libm "$prog" && fail "libm is mapped after sampling and a heap profile: $(grep libm "/proc/$prog/maps" | head -2)"

code=$(fetch /metrics "$HTMP/m.txt")
[ "$code" = 200 ] || fail "/metrics: status $code"
inuse=$(metric allocprof_inuse_bytes "$HTMP/m.txt")
lo=$(metric 'allocprof_inuse_bytes_lower{level="0.95"}' "$HTMP/m.txt")
hi=$(metric 'allocprof_inuse_bytes_upper{level="0.95"}' "$HTMP/m.txt")
echo "inuse $inuse [$lo, $hi]"
awk -v v="$inuse" -v l="$lo" -v h="$hi" 'BEGIN {
	ok = (l == l + 0) && (h == h + 0) && l != "NaN" && h != "NaN" &&
	     l + 0 > 0 && l + 0 <= v + 0 && v + 0 <= h + 0 && h + 0 < 1e15
	exit !ok }' || fail "/metrics bounds not finite around the estimate: $inuse [$lo, $hi]"
maps_have_libm "$prog" || fail "libm was not opened for the /metrics intervals"
stop_prog nolibm "$PID"
echo "runtime without libm: ok"
