#!/usr/bin/env bash
# convert_gzheap_cli_test.sh: a gzip'd heap_v2 profile reads exactly like
# the plain one. rpt_sites writes a heap_v2 profile under the runtime
# (AP_TEST_PRELOAD); gzip'd, `convert --to json|folded|pprof` and `report
# --json` must give the same output as for the plain file. (The CLI once
# sniffed the text header on the compressed bytes and handed the file to
# the pprof decoder, which failed.)
set -euo pipefail
: "${AP_BINDIR:?}" "${AP_PROGDIR:?}"
CLI=$AP_BINDIR/allocprof
LIB=$AP_BINDIR/liballocprof_preload.so
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ap_gzheap.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -r "$LIB" ] || fail "runtime not built: $LIB"

LD_PRELOAD=$LIB ALLOCPROF_OPTIONS="rate=1,format=heap_v2,output=$TMP/p.heap" \
	"$AP_PROGDIR/rpt_sites" > /dev/null
[ -s "$TMP/p.heap" ] || fail "no heap_v2 profile written"
head -c 8 "$TMP/p.heap" | grep -q '^heap_v2/' || fail "not a heap_v2 file"
gzip -c "$TMP/p.heap" > "$TMP/p.heap.gz"

same() { # DESCRIPTION CMD-ARGS... (run on the plain file, then the gzip'd)
	local what=$1
	shift
	"$CLI" "$@" "$TMP/p.heap" > "$TMP/plain.out" ||
		fail "$what: failed on the plain file"
	"$CLI" "$@" "$TMP/p.heap.gz" > "$TMP/gz.out" 2> "$TMP/gz.err" ||
		fail "$what: failed on the gzip'd file: $(cat "$TMP/gz.err")"
	cmp -s "$TMP/plain.out" "$TMP/gz.out" ||
		fail "$what: output differs between the plain and the gzip'd file"
}
same "convert --to json" convert --to json --no-symbolize
same "convert --to folded" convert --to folded --no-symbolize
same "report --json" report --alloc --json --no-symbolize
"$CLI" convert --to pprof -o "$TMP/a.pb.gz" "$TMP/p.heap"
"$CLI" convert --to pprof -o "$TMP/b.pb.gz" "$TMP/p.heap.gz" ||
	fail "convert --to pprof failed on the gzip'd file"
cmp -s <(gzip -dc "$TMP/a.pb.gz") <(gzip -dc "$TMP/b.pb.gz") ||
	fail "convert --to pprof: profiles differ"
echo "gzip'd heap_v2: ok"
