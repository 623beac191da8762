#!/usr/bin/env bash
# pprof_tools_test.sh: the profiles allocprof writes are read correctly by
# the tools users open them with, and allocprof reads what those tools write.
#
#  - go tool pprof (Debian golang-go) reads allocprof's pprof output: the
#    functions and values of a known profile show up in -raw and -top;
#    allocprof decodes pprof's own re-encoding (-proto) and a real Go heap
#    profile written by runtime/pprof.
#  - jeprof (Debian libjemalloc-dev) reads allocprof's heap_v2 output and
#    prints the unbiased totals, within the rounding bound the writer states.
#
# The profiles come from the unit test binaries' hooks
# (AP_WRITE_SAMPLE_PROFILE, AP_WRITE_SAMPLE_HEAPV2, AP_READ_PROFILE), since
# helper programs here are built without liballocprof. Exit 77 when neither
# tool is installed; a missing single tool skips only its half.
set -euo pipefail

bindir=${AP_BINDIR:?AP_BINDIR must point at the build directory}
pprof_test=$bindir/tests/unit_pprof_test
heapv2_test=$bindir/tests/unit_heapv2_test
for t in "$pprof_test" "$heapv2_test"; do
	[[ -x $t ]] || { echo "FAIL: $t not built"; exit 1; }
done

have_go=0 have_jeprof=0
command -v go >/dev/null 2>&1 && have_go=1
command -v jeprof >/dev/null 2>&1 && have_jeprof=1
if ((!have_go && !have_jeprof)); then
	echo "SKIP: neither go nor jeprof is installed"
	exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect NAME TEXT PATTERN: the fixed string PATTERN occurs in TEXT.
expect() {
	if grep -qF -- "$3" <<<"$2"; then
		echo "ok   $1"
	else
		fail "$1: missing \"$3\" in:"
		printf '%s\n' "$2" | sed 's/^/    /' | head -30
	fi
}

# ---- go tool pprof ---------------------------------------------------------
if ((have_go)); then
	# Keep go off the network and out of the user's home.
	export HOME=$tmp/home GOCACHE=$tmp/gocache GOPATH=$tmp/gopath
	export GOTOOLCHAIN=local GOPROXY=off GOFLAGS='' GO111MODULE=auto
	mkdir -p "$HOME"
	prof=$tmp/sample.pb.gz
	AP_WRITE_SAMPLE_PROFILE=$prof "$pprof_test" integration_hooks >/dev/null
	gp() { timeout 120 go tool pprof "$@" 2>&1; }

	raw=$(gp -raw "$prof")
	expect "pprof -raw names the functions" "$raw" "parse_config demo.c:20"
	expect "pprof -raw sees the mapping" "$raw" "/usr/bin/fmt_demo"
	expect "pprof -raw values of stack 1" "$raw" \
		"2000    2048000        500     512000"
	expect "pprof -raw size label" "$raw" "bytes:[1048576 bytes]"

	top=$(gp -top -unit=bytes -sample_index=inuse_space "$prof")
	expect "pprof -top inuse total" "$top" "10997760B total"
	expect "pprof -top inuse load_index" "$top" "10485760B 95.34%  load_index"
	top=$(gp -top -sample_index=alloc_objects "$prof")
	expect "pprof -top alloc_objects total" "$top" "2010 total"
	top=$(gp -top -unit=bytes -sample_index=alloc_space "$prof")
	expect "pprof -top alloc_space total" "$top" "12533760B total"

	# pprof's own encoding of the same profile decodes to the same sums.
	gp -proto "$prof" >"$tmp/reencoded.pb.gz"
	out=$(AP_READ_PROFILE=$tmp/reencoded.pb.gz "$pprof_test" integration_hooks)
	expect "decode pprof's re-encoding" "$out" \
		"decoded samples=2 functions=4 alloc_objects=2010 alloc_space=12533760 inuse_objects=510 inuse_space=10997760"

	# A real Go heap profile: 2000 live 4 KiB slices, every one recorded.
	mkdir -p "$tmp/goheap"
	cat >"$tmp/goheap/main.go" <<'EOF'
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

var keep [][]byte

func grow() {
	for i := 0; i < 2000; i++ {
		keep = append(keep, make([]byte, 4096))
	}
}

func main() {
	runtime.MemProfileRate = 1
	grow()
	runtime.GC()
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		panic(err)
	}
	f.Close()
}
EOF
	if (cd "$tmp/goheap" && timeout 300 go run main.go "$tmp/go.pb.gz"); then
		out=$(AP_READ_PROFILE=$tmp/go.pb.gz "$pprof_test" integration_hooks)
		inuse=$(sed -n 's/.* inuse_space=\([0-9]*\).*/\1/p' <<<"$out")
		if [[ -n $inuse ]] && ((inuse >= 2000 * 4096)); then
			echo "ok   decode a Go heap profile (inuse_space=$inuse)"
		else
			fail "decode a Go heap profile: $out"
		fi
	else
		fail "go run could not build the Go heap profile writer"
	fi
else
	echo "SKIP go tool pprof half: go is not installed"
	partial=1
fi

# A real jemalloc dump of fmt_alloc (2000 x 4 KiB by small_alloc, 20 x 1 MiB
# by big_alloc, all live at exit): our decoder must agree with jeprof on it,
# and our re-encoding must symbolize to the same functions and totals.
jemalloc_dump_checks() {
	local prog=${AP_PROGDIR:-$bindir/tests/integration/progs}/fmt_alloc
	local lib
	lib=$(find /usr/lib /usr/lib64 -maxdepth 2 -name libjemalloc.so.2 \
		2>/dev/null | head -1 || true)
	if [[ -z $lib || ! -x $prog ]]; then
		echo "SKIP jemalloc dump checks: no libjemalloc.so.2 or $prog"
		partial=1
		return
	fi
	if readelf -d "$prog" | grep -qE 'lib(asan|tsan)'; then
		echo "SKIP jemalloc dump checks: $prog is sanitized (cannot preload jemalloc)"
		return
	fi
	mkdir -p "$tmp/je"
	# R = 2^12: every 1 MiB block is sampled (pi = 1 - e^-256).
	MALLOC_CONF=prof:true,lg_prof_sample:12,prof_final:true,prof_prefix:$tmp/je/je \
		LD_PRELOAD=$lib "$prog" || { fail "fmt_alloc under jemalloc"; return; }
	local dump
	dump=$(find "$tmp/je" -name 'je.*.heap' | head -1)
	[[ -n $dump ]] || { fail "jemalloc wrote no heap dump"; return; }
	local je ours re
	je=$(timeout 120 jeprof --text --show_bytes "$prog" "$dump" 2>/dev/null)
	ours=$(AP_READ_HEAPV2=$dump AP_REENCODE_HEAPV2=$tmp/re.heap \
		AP_CONVERT_PPROF=$tmp/conv.pb.gz "$heapv2_test" \
		integration_hook_read | grep '^decoded')
	re=$(timeout 120 jeprof --text --show_bytes "$prog" "$tmp/re.heap" 2>/dev/null)
	local t_je t_ours t_re n
	t_je=$(sed -n 's/^Total: \([0-9]*\) B.*/\1/p' <<<"$je")
	t_re=$(sed -n 's/^Total: \([0-9]*\) B.*/\1/p' <<<"$re")
	t_ours=$(sed -n 's/.* inuse_space=\([0-9]*\).*/\1/p' <<<"$ours")
	n=$(sed -n 's/.*samples=\([0-9]*\).*/\1/p' <<<"$ours")
	# Same scaling as jeprof; we round each stack, so allow 1 per stack.
	if [[ -n $t_je && -n $t_ours ]] && awk -v a="$t_je" -v b="$t_ours" -v n="$n" \
		'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= n) }'; then
		echo "ok   decode of a jemalloc dump matches jeprof ($t_ours vs $t_je B)"
	else
		fail "decode of a jemalloc dump: ours '$ours', jeprof total '$t_je'"
	fi
	# Re-encoding rounds objects to integers: a stack of c samples moves
	# by at most f/(2c) <= 0.05% here (c ~ 1260 for the 4 KiB stack).
	if [[ -n $t_re ]] && awk -v a="$t_je" -v b="$t_re" \
		'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.0005 * a) }'; then
		echo "ok   jeprof total of our re-encoding ($t_re vs $t_je B)"
	else
		fail "jeprof total of our re-encoding: '$t_re' vs '$t_je'"
	fi
	# Every 1 MiB block is sampled, so big_alloc's line is exact.
	if [[ $(awk '/ big_alloc$/ { print $1 }' <<<"$re") == 20971520 ]]; then
		echo "ok   re-encoding symbolizes big_alloc with 20971520 B"
	else
		fail "re-encoding: no big_alloc line of 20971520 B in:"
		printf '%s\n' "$re" | head -10
	fi
	expect "re-encoding symbolizes small_alloc" "$re" "% small_alloc"
	# Converted to pprof, the dump's MAPPED_LIBRARIES mappings let go tool
	# pprof symbolize it from the binary.
	if ((have_go)); then
		local top
		top=$(timeout 120 go tool pprof -top -unit=bytes "$prog" \
			"$tmp/conv.pb.gz" 2>&1)
		if awk '/ big_alloc$/ && $4 == "20971520B" { ok = 1 } END { exit !ok }' \
			<<<"$top"; then
			echo "ok   go tool pprof symbolizes the converted jemalloc dump"
		else
			fail "go tool pprof on the converted dump:"
			printf '%s\n' "$top" | head -12
		fi
	fi
	# Against the truth, 8192000 bytes: the HT estimate's standard
	# deviation is 4096 sqrt(2000 (1 - pi)/pi), 1.7% with pi = 1 - 1/e;
	# 20% is 12 standard deviations, so only a missing unbiasing fails.
	local small
	small=$(awk '/ small_alloc$/ { print $1 }' <<<"$re")
	if [[ -n $small ]] && awk -v x="$small" \
		'BEGIN { d = x - 8192000; if (d < 0) d = -d; exit !(d <= 0.2 * 8192000) }'; then
		echo "ok   small_alloc estimate $small B (true 8192000)"
	else
		fail "small_alloc estimate '$small' B, true 8192000"
	fi
}

# ---- jeprof ----------------------------------------------------------------
if ((have_jeprof)); then
	heap=$tmp/sample.heapv2
	line=$(AP_WRITE_SAMPLE_HEAPV2=$heap "$heapv2_test" \
		integration_hook_write_sample | grep '^expect ')
	val() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$line"; }
	tol=$(val tol)
	# jeprof needs a program argument; /bin/true stands in (addresses
	# stay unsymbolized, the totals do not depend on them).
	for col in inuse_space alloc_space inuse_objects alloc_objects; do
		out=$(timeout 120 jeprof --text --show_bytes --$col /bin/true \
			"$heap" 2>/dev/null)
		got=$(sed -n 's/^Total: \([0-9]*\).*/\1/p' <<<"$out")
		want=$(val $col)
		if [[ -n $got ]] && awk -v g="$got" -v w="$want" -v t="$tol" \
			'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= t * w + 1) }'; then
			echo "ok   jeprof --$col total $got (unbiased $want, tol $tol)"
		else
			fail "jeprof --$col: got '$got', want $want within $tol"
			printf '%s\n' "$out" | head -10
		fi
	done
	# Callers come back as the addresses allocprof stored (raw - 1).
	out=$(timeout 120 jeprof --text --show_bytes /bin/true "$heap" 2>/dev/null)
	expect "jeprof subtracts 1 from callers" "$out" "0x0000000000402fff"
	expect "jeprof keeps the leaf raw" "$out" "0x0000000000401010"

	jemalloc_dump_checks
else
	echo "SKIP jeprof half: jeprof is not installed"
	partial=1
fi

if ((failures)); then
	echo "$failures check(s) failed"
	exit 1
fi
# A half that could not run makes the whole test a skip (exit 77), never a
# pass (the sanitized-build case above is expected and does not count).
if [ "${partial:-0}" = 1 ]; then
	echo "SKIP: part of the checks did not run"
	exit 77
fi
echo "all checks passed"
