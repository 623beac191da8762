#!/usr/bin/env bash
# report_goheap_test.sh: report reads any gzip'd pprof heap profile, not
# only allocprof's. A small Go program (stdlib only, built offline) writes
# its own heap profile with runtime/pprof; report must show its allocating
# functions with Go's own estimates (the values are read, not re-derived),
# say that the intervals are approximate (Go stores no sample counts: they
# are derived from sizes and the period), and merge two such profiles.
set -euo pipefail
: "${AP_BINDIR:?}"
CLI=$AP_BINDIR/allocprof
command -v go >/dev/null || { echo "SKIP: go not installed" >&2; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing" >&2; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ap_goheap.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export HOME=$TMP/home GOCACHE=$TMP/gocache GOTOOLCHAIN=local GOPROXY=off \
	GOFLAGS= GO111MODULE=off
mkdir -p "$HOME"
cat > "$TMP/main.go" <<'EOF'
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

var keep [][]byte

//go:noinline
func allocBig() {
	for i := 0; i < 40; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
}

//go:noinline
func allocSmall() {
	for i := 0; i < 100000; i++ {
		keep = append(keep, make([]byte, 64))
	}
}

func main() {
	runtime.MemProfileRate = 512 * 1024
	allocBig()
	allocSmall()
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
(cd "$TMP" && timeout 300 go build -o goheap main.go) || fail "go build failed"
"$TMP/goheap" "$TMP/heap.pb.gz"
"$TMP/goheap" "$TMP/heap2.pb.gz"
"$CLI" report --alloc "$TMP/heap.pb.gz" > "$TMP/table.txt"
grep -q "approximate" "$TMP/table.txt" || fail "no approximate note: $(cat "$TMP/table.txt")"
"$CLI" report --alloc --json --top 0 "$TMP/heap.pb.gz" > "$TMP/r.json"
"$CLI" convert --to json "$TMP/heap.pb.gz" -o "$TMP/p.json"
"$CLI" merge -o "$TMP/m.pb.gz" "$TMP/heap.pb.gz" "$TMP/heap2.pb.gz"
"$CLI" report --alloc --json --top 0 "$TMP/heap2.pb.gz" > "$TMP/r2.json"
"$CLI" report --alloc --json --top 0 "$TMP/m.pb.gz" > "$TMP/m.json"
python3 - "$TMP" <<'EOF'
import json, sys
d = sys.argv[1]
r = json.load(open(d + "/r.json"))
p = json.load(open(d + "/p.json"))
assert r["approximate"] is True, r
sites = {s["function"]: s for s in r["sites"]}
for f in ("main.allocBig", "main.allocSmall"):
    assert f in sites, (f, list(sites))
    s = sites[f]
    assert s["file"].endswith("main.go") and s["line"] > 0, s
    assert s["bytes_lo"] <= s["bytes"] <= s["bytes_hi"], s
# the report's bytes are Go's own alloc_space values, summed per function
idx = [t["type"] for t in p["sample_types"]].index("alloc_space")
go = sum(s["values"][idx] for s in p["samples"]
         if any(f.get("function") == "main.allocBig" for f in s["stack"][:1]))
assert sites["main.allocBig"]["bytes"] == go, (sites["main.allocBig"]["bytes"], go)
# 40 MiB of 1 MiB objects: nearly every one is sampled, the estimate is close
assert abs(sites["main.allocBig"]["bytes"] - 40 * 2**20) < 8 * 2**20, sites["main.allocBig"]
m = json.load(open(d + "/m.json"))
r2 = json.load(open(d + "/r2.json"))
assert m["total"]["bytes"] == r["total"]["bytes"] + r2["total"]["bytes"], (m["total"], r["total"], r2["total"])
EOF
echo "go heap profile: ok"
