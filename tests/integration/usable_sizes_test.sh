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
#
# Then per size (progs/usable_sizes: one request size per site, 100 B to
# 300 KB) over glibc, jemalloc, tcmalloc and mimalloc: the range's samples
# (range=1, rate 16384, the lowest the range serves, and range_max=0 so that the
# sizes of 64 KiB and more come from the range too) must give each site exactly
# the allocator's usable/requested ratio seen at rate 1, and the runtime
# must have worked the usable size out without allocating (usable_by= in
# its memory line): asking by malloc+free made glibc trim and refault its
# heap on every sampled size of 64 KiB or more.
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

# check_sizes TAG ALLOCATOR WAY [big]: per-site usable/requested ratios of
# the range's samples against rate 1 over ALLOCATOR; WAY: expected usable_by.
check_sizes() {
	local tag=$1 alloc=$2 way=$3 big=${4:-}
	for r in 1 16384; do
		bounded 60 env LD_PRELOAD="$LIB${alloc:+ $alloc}" \
			ALLOCPROF_OPTIONS="rate=$r,seed=3,verbose=1,range=1,range_max=0,output=$TMP/s$tag.$r.pb.gz" \
			"$AP_PROGDIR/usable_sizes" $big 2> "$TMP/s$tag.$r.err" ||
			fail "$tag: usable_sizes failed at rate $r"
		"$CLI" report --alloc --usable --json "$TMP/s$tag.$r.pb.gz" > "$TMP/s$tag.$r.u.json" ||
			fail "$tag: report --usable"
		"$CLI" report --alloc --json "$TMP/s$tag.$r.pb.gz" > "$TMP/s$tag.$r.q.json" ||
			fail "$tag: report"
	done
	grep -qE "usable_by=$way( |\$)" "$TMP/s$tag.16384.err" ||
		fail "$tag: usable sizes not worked out by $way: $(grep -o 'usable_by=.*' "$TMP/s$tag.16384.err")"
	python3 - "$TMP/s$tag" "$tag" "$big" <<'PY' || fail "$tag: the range's usable sizes are not the allocator's"
import json, sys
base, tag, big = sys.argv[1:4]
def ratios(r):
    load = lambda k: {s["function"]: s["bytes"] for s in
                      json.load(open(f"{base}.{r}.{k}.json"))["sites"]}
    u, q = load("u"), load("q")
    return {f: (u[f], q[f]) for f in q if f.startswith("size")}
exact, est = ratios(1), ratios(16384)
want = {"size100", "size5000", "size70001"} | ({"size300001"} if big else set())
assert set(exact) == want and set(est) == want, (exact, est)
for f in sorted(want):
    (eu, eq), (su, sq) = exact[f], est[f]
    print(f"# {tag} {f}: usable/requested {eu / eq:.7f} at rate 1, {su / sq:.7f} from the range")
    # Both sides are sums of w * usable over sums of w * size for one size,
    # so both are usable(n)/n; the JSON's byte counts are rounded to whole
    # bytes, which moves a ratio u/q by at most (0.5/u + 0.5/q) of itself.
    tol = lambda u, q: (0.5 / u + 0.5 / q) * (u / q)
    assert abs(su / sq - eu / eq) <= tol(su, sq) + tol(eu, eq), (f, exact[f], est[f])
PY
}

check glibc ""
# glibc: sizes below its first mmap threshold (128 KiB), where the heap's
# chunk arithmetic is the truth.
check_sizes glibc "" glibc
tc=$(lib_path libtcmalloc_minimal.so.4)
[ -z "$tc" ] || check_sizes tcmalloc "$tc" nallocx big
mi=$(lib_path libmimalloc.so.2)
[ -z "$mi" ] || check_sizes mimalloc "$mi" mi_good_size big
je=$(lib_path libjemalloc.so.2)
if [ -n "$je" ]; then
	check jemalloc "$je"
	check_sizes jemalloc "$je" nallocx big
else
	echo "libjemalloc.so.2 not installed: glibc only" >&2
fi
echo "PASS: --usable reports the allocator's usable sizes"
