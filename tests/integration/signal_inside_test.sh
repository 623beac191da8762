#!/usr/bin/env bash
# signal_inside_test.sh: a terminating signal that arrives while the thread
# is inside the runtime (here: in the allocator underneath, which the
# runtime calls for a sampled block at rate 1; in practice also the
# profile at _exit, where a multiprocessing pool's terminate() catches its
# workers) is held back until the thread leaves the runtime, then dumps
# and ends the process as usual: status 143 and a profile with the
# program's samples. The runtime's handler used to give up at once, and
# the profile was lost.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

busy=$AP_PROGDIR/libap_busy_alloc.so
[ -r "$busy" ] || fail "not built: $busy"
st=0
timeout --kill-after=5 60 env --default-signal=TERM LD_PRELOAD="$LIB $busy" \
	ALLOCPROF_OPTIONS="rate=1,output=$TMP/sig.pb.gz" "$AP_PROGDIR/busy_signal" \
	>"$TMP/out" 2>"$TMP/err" || st=$?
[ "$st" = 143 ] || fail "status $st, want 143 (SIGTERM): $(cat "$TMP/out" "$TMP/err")"
! grep -q survived "$TMP/out" || fail "the program outlived its SIGTERM"
check_readable "$TMP/sig.pb.gz"
"$CLI" report "$TMP/sig.pb.gz" >"$TMP/rep" 2>&1 || fail "report failed: $(cat "$TMP/rep")"
grep -q keep_busy_signal_block "$TMP/rep" || fail "the profile lacks the program's samples: $(cat "$TMP/rep")"
echo "PASS: a SIGTERM inside the runtime waits for it, then dumps"
