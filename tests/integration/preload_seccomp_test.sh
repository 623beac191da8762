#!/usr/bin/env bash
# preload_seccomp_test.sh: a sandboxed program (a seccomp filter whose
# action is to kill, as systemd's SystemCallFilter= and other sandboxes
# use) must not be killed by the runtime's own system calls while it
# samples. libunwind's memory checks made two on a new thread's first
# samples, mincore and (through unwind_nofd.c) process_vm_readv: a
# multi-threaded program that forbade either died at its first sample, at
# every rate, with SIGSYS (status 159). The checks of addresses on the
# thread's own stack are now answered without a system call
# (unwind_stack_readable). progs/seccomp_threads forbids them (and msync,
# libunwind's other way to ask) and allocates from six threads; it must
# print "ok", exit 0 and leave a profile, with each unwinder.
# (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/seccomp_threads
[ -x "$PROG" ] || fail "not built: $PROG"
st=0
bounded 60 "$PROG" process_vm_readv mincore msync >"$TMP/plain" 2>&1 || st=$?
[ $st != 77 ] || skip "no seccomp filters here: $(cat "$TMP/plain")"
[ $st = 0 ] || fail "fails alone: status $st: $(cat "$TMP/plain")"
for u in libunwind libgcc fp; do
	for rate in 1 4096 524288; do
		name=${u}_$rate
		mkdir -p "$TMP/$name"
		st=0
		bounded 60 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=$rate,unwinder=$u,seed=1,output=$TMP/$name/p.%p.pb.gz" \
			"$PROG" process_vm_readv mincore msync >"$TMP/$name.out" 2>"$TMP/$name.err" || st=$?
		[ $st = 0 ] || fail "$name: status $st (159: killed by the filter): $(head -3 "$TMP/$name.err")"
		[ "$(cat "$TMP/$name.out")" = ok ] || fail "$name: printed $(cat "$TMP/$name.out")"
		check_profiles "$name" "$TMP/$name"
	done
done
echo "preload seccomp: ok"
