#!/usr/bin/env bash
# pprof_symbols_test.sh: profiles name the program's own functions without
# a separate step, and pprof puts the bytes on the callers of the
# allocator. progs/static_sites is built without debug information and
# without -rdynamic, so its file-local functions are in its .symtab only:
#
#  - `allocprof run` symbolizes the profile it wrote (`go tool pprof -top
#    BINARY PROFILE`, and without the binary: -symbolize=none); with
#    --no-symbolize the file keeps bare addresses;
#  - over HTTP, `go tool pprof -top http://.../debug/pprof/heap` names them
#    through the runtime's symbol service (also with -symbolize=remote,
#    where the service is pprof's only source);
#  - flat bytes are on grow_table_static (malloc's caller) and
#    make_buffer_static (the caller of std::vector::resize), never on
#    malloc, operator new or std:: frames: every kind of profile allocprof
#    writes carries drop_frames (runtime dump, run's rewrite, HTTP heap and
#    allocs with and without ?seconds=, convert, merge);
#  - the histograms are not pprof comments any more (-comments, -raw);
#  - jeprof names them too in the ?debug=1 text, when installed;
#  - a stripped copy's functions get the names of their starts from the
#    unwind tables (static_sites+0xOFFSET), through the symbol service.
# Exit 77 without go. (AP_TEST_PRELOAD: needs the runtime; skipped in
# sanitizer builds.)
set -euo pipefail
. "$(dirname "$0")/http_endpoints_test.sh"
PROG=$AP_PROGDIR/static_sites
[ -x "$PROG" ] || fail "test program not built: $PROG"
command -v go >/dev/null || skip "go is not installed"
T=$HTMP/sym
mkdir -p "$T"

# The static functions are really absent from the dynamic symbols.
if command -v nm >/dev/null && nm -D "$PROG" | grep -q static; then
	fail "static_sites exports its functions: the test would prove nothing"
fi

# flat_of TOPFILE NAME: the flat column of NAME's line in pprof -top -unit=B.
flat_of() {
	awk -v n="$2" '$NF == n { sub(/B$/, "", $1); print $1; exit }' "$1"
}
# check_top WHAT TOPFILE: the static functions are named, flat bytes on
# the two callers of the allocator and nowhere in the allocator.
check_top() {
	local what=$1 f=$2 fn
	for fn in grow_table_static make_buffer_static fill_cache_static \
		fill_buffers_static main; do
		grep -q " $fn\$" "$f" || fail "$what: $fn not named: $(head -20 "$f")"
	done
	for fn in grow_table_static make_buffer_static; do
		local v
		v=$(flat_of "$f" "$fn")
		[ -n "$v" ] && [ "$v" != 0 ] || fail "$what: no flat bytes on $fn: $(head -20 "$f")"
	done
	# Nothing of the allocator keeps flat bytes (columns: flat flat% ...).
	if awk '$1 != "0" && $1 ~ /^[0-9.]+[kMG]?B$/' "$f" |
		grep -E ' (malloc|operator new|_Znwm|std::|__gnu_cxx::|\[libc)' >&2; then
		fail "$what: flat bytes on allocator frames"
	fi
	# The two callers hold nearly all of it: 64 MiB of the program's
	# blocks; the rest is start-up allocations of the C++ runtime (about
	# 73 KiB: at most one sample of weight R = 512 KiB, about 1%).
	local total two
	total=$(sed -n 's/.*Total samples = \([0-9]*\)B.*/\1/p' "$f")
	two=$(($(flat_of "$f" grow_table_static) + $(flat_of "$f" make_buffer_static)))
	[ -n "$total" ] && awk -v a="$two" -v t="$total" 'BEGIN { exit !(a >= 0.9 * t) }' ||
		fail "$what: the callers hold $two of $total bytes: $(head -20 "$f")"
	echo "ok   $what"
}
# drop_frames_of FILE: the profile's drop_frames, through convert's JSON.
check_drop() {
	local what=$1 f=$2
	"$CLI" convert --to json --no-symbolize "$f" >"$T/drop.json" 2>&1 ||
		fail "$what: convert --to json: $(head -3 "$T/drop.json")"
	grep -Eq '"drop_frames": *"malloc\|calloc\|' "$T/drop.json" ||
		fail "$what: no drop_frames: $(grep -o '"drop_frames":[^,]*' "$T/drop.json")"
	echo "ok   drop_frames in $what"
}

# ---- allocprof run -----------------------------------------------------------
bounded 120 "$CLI" run -q -o "$T/run.pb.gz" "$PROG" || fail "allocprof run failed"
go_pprof -top -unit=B "$PROG" "$T/run.pb.gz" >"$T/run.top" 2>&1 || fail "pprof: $(cat "$T/run.top")"
check_top "run: pprof -top BINARY PROFILE" "$T/run.top"
go_pprof -top -unit=B -symbolize=none "$T/run.pb.gz" >"$T/run.none" 2>&1
check_top "run: pprof -top without the binary" "$T/run.none"
check_drop "run's symbolized profile" "$T/run.pb.gz"
go_pprof -comments "$T/run.pb.gz" >"$T/run.comments" 2>&1
go_pprof -raw "$PROG" "$T/run.pb.gz" >"$T/run.raw" 2>&1
if grep -i 'hist' "$T/run.comments" "$T/run.raw"; then
	fail "histograms still shown by pprof"
fi
"$CLI" report --sizes "$T/run.pb.gz" >"$T/sizes" 2>&1 || fail "report --sizes: $(head -3 "$T/sizes")"
grep -q 'alloc_size' "$T/sizes" || fail "report --sizes lost the histogram: $(cat "$T/sizes")"
echo "ok   histograms out of pprof's header, read by report --sizes"

bounded 120 "$CLI" run -q --no-symbolize -o "$T/raw.pb.gz" "$PROG" || fail "run --no-symbolize"
go_pprof -top -unit=B -symbolize=none "$T/raw.pb.gz" >"$T/raw.none" 2>&1
if grep -q 'grow_table_static' "$T/raw.none"; then
	fail "--no-symbolize: the profile has names"
fi
check_drop "a runtime dump" "$T/raw.pb.gz"
echo "ok   run --no-symbolize keeps addresses"

# convert (from heap_v2, which has no drop_frames of its own) and merge.
bounded 120 "$CLI" run -q --format heap_v2 -o "$T/run.heap" "$PROG" || fail "run heap_v2"
"$CLI" convert --to pprof -o "$T/conv.pb.gz" "$T/run.heap" || fail "convert"
check_drop "convert from heap_v2" "$T/conv.pb.gz"
"$CLI" merge -o "$T/merged.pb.gz" "$T/raw.pb.gz" "$T/run.pb.gz" || fail "merge"
check_drop "merge" "$T/merged.pb.gz"

# ---- over HTTP -----------------------------------------------------------------
HPROG=$PROG
start_prog sym dump_at_exit=0
wait_ready "$HTMP/sym.out" || fail "static_sites never got ready: $(cat "$HTMP/sym.err")"
go_pprof -top -unit=B "http://$ADDR/debug/pprof/heap" >"$T/http.top" 2>&1 ||
	fail "pprof over HTTP: $(head -5 "$T/http.top")"
check_top "HTTP: pprof -top http://.../heap" "$T/http.top"
go_pprof -top -unit=B -symbolize=remote "http://$ADDR/debug/pprof/heap" \
	>"$T/remote.top" 2>&1 || fail "pprof -symbolize=remote: $(head -5 "$T/remote.top")"
check_top "HTTP: the symbol service alone (-symbolize=remote)" "$T/remote.top"
for q in heap allocs 'heap?seconds=1' 'allocs?seconds=1'; do
	code=$(fetch "/debug/pprof/$q" "$T/h.pb.gz")
	[ "$code" = 200 ] || fail "/debug/pprof/$q: status $code"
	check_drop "HTTP /debug/pprof/$q" "$T/h.pb.gz"
done
if command -v jeprof >/dev/null; then
	code=$(fetch '/debug/pprof/heap?debug=1' "$T/heap.txt")
	[ "$code" = 200 ] || fail "heap?debug=1: status $code"
	bounded 120 jeprof --text "$PROG" "$T/heap.txt" >"$T/jep.top" 2>&1 ||
		fail "jeprof: $(head -5 "$T/jep.top")"
	grep -q 'grow_table_static' "$T/jep.top" && grep -q 'make_buffer_static' "$T/jep.top" ||
		fail "jeprof does not name the static functions: $(head -12 "$T/jep.top")"
	echo "ok   jeprof on ?debug=1 names them"
fi
stop_prog sym "$PID"

# A stripped copy (no .symtab, as a release build ships): no table names the
# static functions, so the symbol service names each by where it starts,
# from the unwind tables, static_sites+0xOFFSET as `allocprof report` does
# (docs/REPORTS.md); OFFSET is worked out here from the unstripped file.
if command -v strip >/dev/null && command -v nm >/dev/null && command -v readelf >/dev/null; then
	strip -o "$T/static_sites" "$PROG"
	HPROG=$T/static_sites
	start_prog stripped dump_at_exit=0
	wait_ready "$HTMP/stripped.out" || fail "stripped copy never got ready: $(cat "$HTMP/stripped.err")"
	go_pprof -top -unit=B -symbolize=remote "http://$ADDR/debug/pprof/heap" \
		>"$T/stripped.top" 2>&1 || fail "pprof, stripped: $(head -5 "$T/stripped.top")"
	stop_prog stripped "$PID"
	for fn in grow_table_static make_buffer_static; do
		want=$(python3 - "$PROG" "$fn" <<'PY'
import subprocess, sys
prog, fn = sys.argv[1:]
nm = subprocess.run(["nm", "-C", prog], capture_output=True, text=True).stdout
v = [int(l.split()[0], 16) for l in nm.splitlines()
     if len(l.split(None, 2)) == 3 and l.split(None, 2)[2].startswith(fn + "(")][0]
for l in subprocess.run(["readelf", "-lW", prog], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f[:1] == ["LOAD"] and int(f[2], 16) <= v < int(f[2], 16) + int(f[4], 16):
        print("static_sites+0x%x" % (v - int(f[2], 16) + int(f[1], 16)))
PY
)
		[ -n "$want" ] || fail "no offset for $fn"
		[ "$fn" = grow_table_static ] && want_grow=$want
		grep -q " $want\$" "$T/stripped.top" ||
			fail "stripped: $fn not named $want: $(head -20 "$T/stripped.top")"
	done
	# malloc's caller keeps its flat bytes. (make_buffer_static's go to
	# std::vector's code compiled into the program, which nothing names
	# in a stripped file, so drop_frames cannot skip it.)
	v=$(flat_of "$T/stripped.top" "$want_grow")
	[ -n "$v" ] && [ "$v" != 0 ] ||
		fail "stripped: no flat bytes on $want_grow: $(head -20 "$T/stripped.top")"
	echo "ok   HTTP, stripped program: its functions named by their starts"
fi
echo "PASS"
