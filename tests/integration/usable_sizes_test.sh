#!/usr/bin/env bash
# usable_sizes_test.sh: `report --usable` against the truth (issue 12,
# item 5). progs/usable16 makes 400000 allocations of 16 bytes. At rate 1
# every one is recorded: the usable bytes are exactly 400000 x the
# allocator's usable size of 16 bytes. At the default rate (R = 512 KiB,
# about 12 samples, served from allocprof's page-sized range) the estimate
# must be of the same quantity: the rate-1 value inside its 95% interval
# (a fixed seed; the interval covers with probability 0.95 by
# construction, and this seed is one where it does), and the usable/
# requested ratio of the estimate must equal the allocator's (both sides
# weight each sample by the same 1/pi). Before, the range's page size was
# weighted instead: about 4096/16 = 256 times the requested bytes.
# On glibc and, when installed, jemalloc.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

# check TAG ALLOCATOR: rate 1 vs default rate over ALLOCATOR ("" = glibc)
check() {
	local tag=$1 alloc=$2
	for r in 1 524288; do
		bounded 60 env LD_PRELOAD="$LIB${alloc:+ $alloc}" \
			ALLOCPROF_OPTIONS="rate=$r,seed=3,output=$TMP/$tag.$r.pb.gz" \
			"$AP_PROGDIR/usable16" || fail "$tag: usable16 failed at rate $r"
		"$CLI" report --alloc --usable --json --focus '^small16$' \
			"$TMP/$tag.$r.pb.gz" > "$TMP/$tag.$r.u.json" || fail "$tag: report --usable"
		"$CLI" report --alloc --json --focus '^small16$' \
			"$TMP/$tag.$r.pb.gz" > "$TMP/$tag.$r.q.json" || fail "$tag: report"
	done
	python3 - "$TMP/$tag" "$tag" <<'PY' || fail "$tag: --usable is not the allocator's usable size"
import json, sys
base, tag = sys.argv[1], sys.argv[2]
t = lambda r, k: json.load(open(f"{base}.{r}.{k}.json"))["total"]
exact_u, exact_q = t(1, "u"), t(1, "q")
est_u, est_q = t(524288, "u"), t(524288, "q")
assert exact_q["bytes"] == 400000 * 16, exact_q
per = exact_u["bytes"] / 400000
print(f"# {tag}: usable of 16 B = {per}; estimate {est_u['bytes']} "
      f"[{est_u['bytes_lo']}, {est_u['bytes_hi']}] vs {exact_u['bytes']}")
assert per in (16, 24, 32), per
assert est_u["bytes_lo"] <= exact_u["bytes"] <= est_u["bytes_hi"], (est_u, exact_u)
assert abs(est_u["bytes"] / est_q["bytes"] - per / 16) < 1e-3, (est_u, est_q)
PY
}

check glibc ""
je=$(lib_path libjemalloc.so.2)
if [ -n "$je" ]; then
	check jemalloc "$je"
else
	echo "libjemalloc.so.2 not installed: glibc only" >&2
fi
echo "PASS: --usable reports the allocator's usable sizes"
