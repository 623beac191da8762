#!/usr/bin/env bash
# large_samples_test.sh: sampled blocks of range_max (64 KiB) or more stay
# with the allocator underneath, and their frees are still seen.
# progs/large_samples makes 1200 blocks of 200-400 KB through malloc,
# calloc, aligned_alloc and realloc (from a small block), keeps every third
# one, frees the rest among small blocks of the same heap, and exits. At
# rate=16384 (the lowest rate the range serves) each is sampled with
# probability at least 1 - e^-12.2 (weight below 1 + 5e-6), so each site's
# estimates are its true counts to within 0.01: 300 allocated, 100 in use.
# A free the runtime missed (the allocator freed a block the sampled set
# still holds) leaves the in-use count at up to 300; one of a block never
# sampled or mistaken for sampled would also move it.
#  - over glibc, jemalloc, tcmalloc and mimalloc (those installed): exact
#    counts per site, no errors;
#  - over glibc, none of the kept blocks bears the range's signature (page
#    aligned, page-multiple usable size; glibc's mmapped blocks start 16
#    bytes into a page), and with range_max=0 all of them do: the
#    signature tells the two placements apart.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

PROG=$AP_PROGDIR/large_samples
[ -x "$PROG" ] || fail "not built: $PROG"

# run TAG PRELOAD [OPTIONS]: leaves "live N range M" in $TMP/TAG.out and the
# profile in $TMP/TAG.pb.gz; checks the per-site counts.
run() {
	local tag=$1 pre=$2 opts=${3:+$3,}
	bounded 120 env LD_PRELOAD="$pre" \
		ALLOCPROF_OPTIONS="rate=16384,seed=11,${opts}output=$TMP/$tag.pb.gz" \
		"$PROG" >"$TMP/$tag.out" 2>"$TMP/$tag.err" || fail "$tag: failed: $(head -5 "$TMP/$tag.err")"
	[ ! -s "$TMP/$tag.err" ] || fail "$tag: stderr: $(head -5 "$TMP/$tag.err")"
	grep -q '^live 400 range ' "$TMP/$tag.out" || fail "$tag: $(cat "$TMP/$tag.out")"
	"$CLI" report --inuse --json --focus '^big_' "$TMP/$tag.pb.gz" >"$TMP/$tag.i.json" ||
		fail "$tag: report --inuse"
	"$CLI" report --alloc --json --focus '^big_' "$TMP/$tag.pb.gz" >"$TMP/$tag.a.json" ||
		fail "$tag: report --alloc"
	python3 - "$TMP/$tag" "$tag" <<'PY' || fail "$tag: the large sampled blocks are not counted exactly"
import json, sys
base, tag = sys.argv[1], sys.argv[2]
def sites(k):
    return {s["function"]: s["objects"] for s in json.load(open(f"{base}.{k}.json"))["sites"]}
inuse, alloc = sites("i"), sites("a")
want = {"big_malloc", "big_calloc", "big_aligned", "big_realloc"}
print(f"# {tag}: in use {inuse}; allocated {alloc}")
assert want <= set(alloc), alloc  # also "settle": the small blocks
for f in want:
    assert abs(alloc[f] - 300) < 0.01, (f, alloc[f])
    assert abs(inuse.get(f, 0) - 100) < 0.01, (f, inuse.get(f))
PY
}

run glibc "$LIB" "range=1"
grep -q '^live 400 range 0$' "$TMP/glibc.out" ||
	fail "glibc: kept blocks came from the range: $(cat "$TMP/glibc.out")"
run glibc_all "$LIB" "range=1,range_max=0"
grep -q '^live 400 range 400$' "$TMP/glibc_all.out" ||
	fail "glibc, range=1,range_max=0: not every kept block came from the range: $(cat "$TMP/glibc_all.out")"

for soname in libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2; do
	alloc=$(lib_path "$soname")
	[ -n "$alloc" ] || continue
	run "${soname%%.so*}" "$LIB $alloc" "range=1"
done
echo "PASS: large sampled blocks stay with the allocator, counted exactly"
