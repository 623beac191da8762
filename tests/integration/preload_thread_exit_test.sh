#!/usr/bin/env bash
# preload_thread_exit_test.sh: a sample taken after the runtime has let go
# of the thread costs nothing for good. The runtime gives a thread's capture
# buffers back in its own thread-specific data destructor; a destructor
# that glibc runs after it (a key the program made later) and allocates
# used to map them again, for good: 4 KiB per thread, 80 MB over 20,000
# threads. progs/key_dtor_alloc runs 2000 threads one after another, each
# allocating in such a destructor; at rate=1, with each unwinder, the
# process's address space must grow as it does alone (within 1 MiB: the
# leak was 8 MB here), and the destructor's blocks must be in the profile,
# exactly, under the function that allocated them.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/key_dtor_alloc
[ -x "$PROG" ] || fail "not built: $PROG"
command -v python3 >/dev/null || { echo "SKIP: python3 missing" >&2; exit 77; }

bounded 60 "$PROG" >"$TMP/alone.out" || fail "key_dtor_alloc fails alone"
alone=$(awk '$1 == "vmsize" { print $2 }' "$TMP/alone.out")
for u in libunwind fp libgcc; do
	bounded 60 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=1,unwinder=$u,output=$TMP/$u.pb.gz" \
		"$PROG" >"$TMP/$u.out" 2>"$TMP/$u.err" || fail "unwinder=$u: $(head -3 "$TMP/$u.err")"
	grep -qx ok "$TMP/$u.out" || fail "unwinder=$u: output $(head -3 "$TMP/$u.out")"
	got=$(awk '$1 == "vmsize" { print $2 }' "$TMP/$u.out")
	[ $((got - alone)) -le 1024 ] ||
		fail "unwinder=$u: the address space grew by $got kB, alone by $alone kB"
	"$CLI" report --alloc --json --top 0 "$TMP/$u.pb.gz" >"$TMP/$u.json" || fail "report"
	want=$(awk '$1 == "dtor_alloc" { print $2 }' "$TMP/$u.out")
	python3 - "$TMP/$u.json" "$want" "$u" <<'PY' || exit 1
import json, sys
rows = json.load(open(sys.argv[1]))["sites"]
got = [r for r in rows if r["function"] == "dtor_alloc"]
if len(got) != 1 or round(got[0]["bytes"]) != int(sys.argv[2]):
    sys.exit("FAIL: unwinder=%s: dtor_alloc: want %s bytes, rows %s"
             % (sys.argv[3], sys.argv[2], [(r["function"], r["bytes"]) for r in rows]))
PY
	echo "ok   unwinder=$u: grew $got kB (alone $alone kB)"
done
echo PASS
