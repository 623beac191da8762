#!/usr/bin/env bash
# report_badinput_test.sh: bad input never crashes report, merge or convert.
# Truncated, corrupt, empty, non-gzip and wrong-type profiles, missing files
# and unwritable outputs each give exactly one line on stderr naming the
# problem and exit 2; usage mistakes exit 1; --help exits 0. Profiles come
# from view_mkprof (an independent pprof writer), so no runtime is needed.
set -euo pipefail
: "${AP_BINDIR:?}" "${AP_PROGDIR:?}"
CLI=$AP_BINDIR/allocprof
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ap_badinput.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing" >&2; exit 77; }

printf '100 5 2 main;parse\n4096 3 3 main;cache\n' |
	"$AP_PROGDIR/view_mkprof" 65536 "$TMP/good.pb" >/dev/null
gzip -c "$TMP/good.pb" > "$TMP/good.pb.gz"
size=$(stat -c %s "$TMP/good.pb.gz")
head -c $((size / 2)) "$TMP/good.pb.gz" > "$TMP/truncated.pb.gz"
head -c $((size - 3)) "$TMP/good.pb.gz" > "$TMP/short_trailer.pb.gz"
: > "$TMP/empty.pb.gz"
echo "this is not a profile at all" > "$TMP/text.txt"
head -c 4096 /dev/urandom > "$TMP/random.bin"
python3 - "$TMP" <<'EOF'
import sys, gzip
d = sys.argv[1]
good = open(d + "/good.pb", "rb").read()
# corrupt: a length prefix pointing past the end, deep inside the message
bad = bytearray(good)
bad[len(bad) // 2] = 0x0a          # field 1, length-delimited
bad[len(bad) // 2 + 1] = 0x7f      # 127 bytes: runs past the buffer end
open(d + "/corrupt.pb", "wb").write(bytes(bad[: len(bad) // 2 + 8]))
open(d + "/corrupt_gz.pb.gz", "wb").write(gzip.compress(bytes(bad[: len(bad) // 2 + 8])))
# a valid pprof CPU profile: sample_type {cpu, nanoseconds}, strings
def varint(v):
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out
def field(n, payload):
    return varint(n << 3 | 2) + varint(len(payload)) + payload
vt = varint(1 << 3) + varint(1) + varint(2 << 3) + varint(2)
prof = field(1, vt) + b"".join(field(6, s) for s in (b"", b"cpu", b"nanoseconds"))
open(d + "/cpu.pb.gz", "wb").write(gzip.compress(prof))
EOF

# expect_status STATUS CMD...: exit status, one prefixed stderr line, no stdout
EXPECT_DIR=$TMP
# shellcheck source=cli_expect.sh
. "$(dirname "$0")/cli_expect.sh"

for f in truncated.pb.gz short_trailer.pb.gz empty.pb.gz text.txt random.bin \
	corrupt.pb corrupt_gz.pb.gz cpu.pb.gz missing.pb.gz; do
	expect_status 2 "$CLI" report "$TMP/$f"
	grep -q "$TMP/$f" "$TMP/err" || fail "report $f: error does not name the file: $(cat "$TMP/err")"
	expect_status 2 "$CLI" merge -o "$TMP/m.pb.gz" "$TMP/good.pb.gz" "$TMP/$f"
	[ ! -e "$TMP/m.pb.gz" ] || fail "merge wrote output despite bad input $f"
	expect_status 2 "$CLI" convert --to folded "$TMP/$f"
done
grep -q "not a heap profile" <("$CLI" report "$TMP/cpu.pb.gz" 2>&1) || fail "cpu profile: wrong reason"
grep -q "empty" <("$CLI" report "$TMP/empty.pb.gz" 2>&1) || fail "empty file: wrong reason"

# the good profile works, plain and gzip'd, and merges
expect_status 0 "$CLI" report "$TMP/good.pb"
expect_status 0 "$CLI" report --alloc --json "$TMP/good.pb.gz"
expect_status 0 "$CLI" merge -o "$TMP/m.pb.gz" "$TMP/good.pb" "$TMP/good.pb.gz"

# unwritable output
expect_status 2 "$CLI" merge -o "$TMP/no/such/dir/m.pb.gz" "$TMP/good.pb"
expect_status 2 "$CLI" convert --to pprof -o "$TMP/no/such/dir/x" "$TMP/good.pb"

# usage errors exit 1
expect_status 1 "$CLI" report
expect_status 1 "$CLI" report --level 1.5 "$TMP/good.pb"
expect_status 1 "$CLI" report --level nan "$TMP/good.pb"
expect_status 1 "$CLI" report --by file "$TMP/good.pb"
expect_status 1 "$CLI" report --top -3 "$TMP/good.pb"
expect_status 1 "$CLI" report --size 10:5 "$TMP/good.pb"
expect_status 1 "$CLI" report --size x "$TMP/good.pb"
expect_status 1 "$CLI" report --focus '([' "$TMP/good.pb"
expect_status 1 "$CLI" report --frobnicate "$TMP/good.pb"
expect_status 1 "$CLI" merge "$TMP/good.pb"
expect_status 1 "$CLI" merge -o "$TMP/x.pb.gz"
expect_status 1 "$CLI" convert "$TMP/good.pb"
expect_status 1 "$CLI" convert --to svg "$TMP/good.pb"
expect_status 1 "$CLI" convert --to folded "$TMP/good.pb" "$TMP/good.pb"
expect_status 1 "$CLI" convert --to heap_v2 --symbolize "$TMP/good.pb"
for c in report merge convert; do
	expect_status 0 "$CLI" $c --help
	grep -q "^usage: allocprof $c" "$TMP/out" || fail "$c --help"
done
echo "bad input: ok"
