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
# print "ok", exit 0 and leave a profile, with each unwinder. Then a
# program that installs a filter itself (below).
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
			ALLOCPROF_OPTIONS="rate=$rate,unwinder=$u,seed=1,verbose=1,output=$TMP/$name/p.%p.pb.gz" \
			"$PROG" process_vm_readv mincore msync >"$TMP/$name.out" 2>"$TMP/$name.err" || st=$?
		[ $st = 0 ] || fail "$name: status $st (159: killed by the filter): $(head -3 "$TMP/$name.err")"
		[ "$(cat "$TMP/$name.out")" = ok ] || fail "$name: printed $(cat "$TMP/$name.out")"
		check_profiles "$name" "$TMP/$name"
		# No unwind-table trim under a filter (ehtrim.h): its openat,
		# pread64 and madvise may be forbidden. At rate 1 the libunwind
		# run makes enough lookups for one (it did, before the check).
		grep -q 'unwind_trims=0 ' "$TMP/$name.err" ||
			fail "$name: trimmed under a seccomp filter: $(grep -o 'unwind_trims=[0-9]*' "$TMP/$name.err")"
	done
done
# A program that confines itself (sshd's pre-authentication child does, by
# prctl): the runtime writes its profile before the filter goes in, stops
# its threads and sampling, and writes nothing at exit, where the filter
# would kill it. At rate 1 the profile holds the 300 blocks before and none
# of the 500 after. Before: status 159 at the exit dump.
SELF=$AP_PROGDIR/self_sandbox
[ -x "$SELF" ] || fail "not built: $SELF"
st=0
bounded 60 "$SELF" >"$TMP/self.plain" 2>&1 || st=$?
if [ $st = 77 ]; then
	echo "note: no seccomp filters for self_sandbox: $(cat "$TMP/self.plain")"
else
	[ $st = 0 ] || fail "self_sandbox fails alone: status $st: $(cat "$TMP/self.plain")"
	for opts in "" ",http=127.0.0.1:0" ",interval=50ms"; do
		mkdir -p "$TMP/self"
		rm -f "$TMP/self"/*
		st=0
		bounded 60 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=1,output=$TMP/self/p.%p.%n.pb.gz$opts" \
			"$SELF" >"$TMP/self.out" 2>"$TMP/self.err" || st=$?
		[ $st = 0 ] || fail "self_sandbox ($opts): status $st (159: killed by its filter): $(head -3 "$TMP/self.err")"
		[ "$(cat "$TMP/self.out")" = ok ] || fail "self_sandbox ($opts): printed $(cat "$TMP/self.out")"
		f=$(ls -t "$TMP/self"/*.pb.gz 2>/dev/null | head -1)
		[ -n "$f" ] || fail "self_sandbox ($opts): no profile from before the filter"
		b=$(objects_of "$f" before_filter)
		a=$(objects_of "$f" after_filter)
		[ "$b" = 300 ] && [ -z "$a" ] ||
			fail "self_sandbox ($opts): before_filter '$b' and after_filter '$a' objects, want 300 and none"
	done
	# seccomp_keep=1: the user vouches for the filter, here one that kills
	# at kcmp only: profiling goes on, the exit dump has both sites.
	for keep in 0 1; do
		rm -f "$TMP/self"/*
		bounded 60 env LD_PRELOAD="$LIB" \
			ALLOCPROF_OPTIONS="rate=1,output=$TMP/self/k.%p.%n.pb.gz,seccomp_keep=$keep" \
			"$SELF" permissive >"$TMP/self.out" 2>"$TMP/self.err" ||
			fail "self_sandbox permissive (seccomp_keep=$keep): status $?: $(head -3 "$TMP/self.err")"
		f=$(ls -t "$TMP/self"/*.pb.gz 2>/dev/null | head -1)
		[ -n "$f" ] || fail "self_sandbox permissive (seccomp_keep=$keep): no profile"
		b=$(objects_of "$f" before_filter)
		a=$(objects_of "$f" after_filter)
		want=
		[ $keep = 0 ] || want=500
		[ "$b" = 300 ] && [ "$a" = "$want" ] ||
			fail "self_sandbox permissive (seccomp_keep=$keep): before_filter '$b', after_filter '$a', want 300 and '$want'"
	done
fi

echo "preload seccomp: ok"
