#!/usr/bin/env bash
# attach_busy_test.sh: ap_runtime_attach and ap_runtime_detach called by a
# thread inside the runtime answer AP_EBUSY (-9) and do nothing, so
# `allocprof attach` moves on to another thread (docs/ATTACH.md) instead
# of running them over a sample half taken. The state is made on purpose:
# the allocator underneath (libs/busy_alloc.c) calls both from its malloc,
# which the runtime calls with its guard held for every sampled block at
# rate 1. Called from outside, a preloaded runtime answers
# AP_EUNSUPPORTED (-8): the answer the guard replaces. The program must
# finish normally and its profile stay readable.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

busy=$AP_PROGDIR/libap_busy_alloc.so
[ -r "$busy" ] || fail "not built: $busy"
out=$(bounded 60 env LD_PRELOAD="$LIB $busy" \
	ALLOCPROF_OPTIONS="rate=1,output=$TMP/busy.pb.gz" "$AP_PROGDIR/busy_attach") ||
	fail "busy_attach failed: $out"
want="outside=-8 inside_attach=-9 inside_detach=-9"
[ "$out" = "$want" ] || fail "got '$out', want '$want'"
"$CLI" report --alloc "$TMP/busy.pb.gz" > "$TMP/report.txt" || fail "profile unreadable"
grep -q "main" "$TMP/report.txt" || fail "the sampled malloc is not in the profile"
echo "PASS: inside the runtime, attach and detach answer AP_EBUSY"
