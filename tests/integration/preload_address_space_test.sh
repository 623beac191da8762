#!/usr/bin/env bash
# preload_address_space_test.sh: the runtime's address space and commit
# charge (src/preload/README.md, "Address space and commit").
#
# 1. Under `ulimit -v 1048576` (1 GiB) a program allocating 16 KiB blocks
#    until malloc fails gets nearly what it gets alone. The runtime's share
#    is its reservation, at most 1/64 of the limit (16 MiB), plus its own
#    libraries and tables: the margin is 32 MiB. (A fixed 64 GiB reservation
#    quartered until it fits took 256 MiB here.) No line on stderr: the
#    profile is written.
# 2. A single malloc larger than RAM + swap: NULL under the runtime exactly
#    when NULL alone (the kernel's overcommit check applies to the range as
#    to the allocator's own mmap), whatever vm.overcommit_memory is.
# 3. Commit charge: an idle program's VmData (private writable mappings:
#    what overcommit_memory=2 charges, MAP_NORESERVE or not) grows by less
#    than 16 MiB under the runtime (1.15 GB with a writable side table).
#    Mode 2 itself is not set here: it is a host-wide sysctl.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

prog=$AP_PROGDIR/alloc_limit
mkdir -p "$TMP/prof"
# range=1: the reservation stays (the default, range=0, gives it back at
# start-up, keeping only the bootstrap pool), so its caps are what is tested.
opts="seed=9,range=1,output=$TMP/prof/p.%p.pb.gz"

# limited PRELOAD: MiB the program gets under the 1 GiB limit.
limited() {
	(
		ulimit -v 1048576
		bounded 120 env LD_PRELOAD="$1" ALLOCPROF_OPTIONS="$opts" \
			"$prog" chunks 16384 2>"$TMP/limited.err"
	) | awk '$1 == "chunks" { print $2 }'
}
alone=$(limited "")
under=$(limited "$LIB")
echo "1 GiB limit: $alone MiB alone, $under MiB under the runtime" >&2
[ -n "$alone" ] && [ -n "$under" ] || fail "alloc_limit did not report"
[ "$under" -ge $((alone - 32)) ] ||
	fail "under RLIMIT_AS the runtime took $((alone - under)) MiB (margin 32)"
[ ! -s "$TMP/limited.err" ] || fail "stderr under the limit: $(head -3 "$TMP/limited.err")"
check_profiles limited "$TMP/prof"

mem_kib=$(awk '$1 == "MemTotal:" || $1 == "SwapTotal:" { s += $2 } END { print s }' /proc/meminfo)
huge=$(((mem_kib + 1048576) * 1024))
want=$(bounded 60 "$prog" huge "$huge")
got=$(bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="$opts" "$prog" huge "$huge")
echo "malloc($huge): alone '$want', under the runtime '$got'" >&2
[ "$want" = "$got" ] || fail "malloc($huge) gave '$got' under the runtime, '$want' alone"

vmdata() {
	bounded 60 env LD_PRELOAD="$1" ALLOCPROF_OPTIONS="$opts" \
		awk '$1 == "VmData:" { print $2 }' /proc/self/status
}
d0=$(vmdata "")
d1=$(vmdata "$LIB")
echo "VmData: $d0 kB alone, $d1 kB under the runtime" >&2
[ $((d1 - d0)) -lt 16384 ] || fail "the runtime adds $((d1 - d0)) kB of writable mappings"
echo "address space: ok"
