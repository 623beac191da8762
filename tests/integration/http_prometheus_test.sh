#!/usr/bin/env bash
# http_prometheus_test.sh: a real Prometheus server (Debian's 2.42) scrapes
# a profiled program's /metrics every second, and queries through its HTTP
# API (/api/v1/query) return the allocprof series with sensible values.
# Twice: once in the text format (Prometheus' default) and once with
# --enable-feature=native-histograms, where Prometheus asks for the
# protobuf format and the size histogram arrives as a native histogram.
# Everything listens on 127.0.0.1 and is stopped by pid at exit.
# (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/http_endpoints_test.sh"

command -v prometheus >/dev/null || skip "prometheus is not installed"
command -v python3 >/dev/null || skip "python3 is not installed (reads the API's JSON)"

# start_prometheus NAME [FLAGS...]: start Prometheus scraping $ADDR every
# second. --web.listen-address does not take port 0, so try random free
# ports until one binds. Sets PROM (127.0.0.1:PORT) and PROM_PID.
start_prometheus() {
	local name=$1 try port i
	shift
	mkdir -p "$HTMP/$name"
	cat >"$HTMP/$name/prometheus.yml" <<-EOF
		global:
		  scrape_interval: 1s
		  scrape_timeout: 1s
		scrape_configs:
		  - job_name: allocprof
		    static_configs:
		      - targets: ['$ADDR']
	EOF
	for try in 1 2 3 4 5 6 7 8; do
		port=$((20000 + RANDOM % 40000))
		# Taken if something answers there.
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue
		fi
		timeout --kill-after=5 120 prometheus \
			--config.file="$HTMP/$name/prometheus.yml" \
			--storage.tsdb.path="$HTMP/$name/data" \
			--web.listen-address="127.0.0.1:$port" "$@" \
			>"$HTMP/$name/log" 2>&1 </dev/null &
		PROM_PID=$!
		HPIDS+=("$PROM_PID")
		for i in $(seq 100); do
			if curl -sf --max-time 1 -o /dev/null "http://127.0.0.1:$port/-/ready"; then
				PROM=127.0.0.1:$port
				return 0
			fi
			kill -0 "$PROM_PID" 2>/dev/null || break
			sleep 0.2
		done
		kill -TERM "$PROM_PID" 2>/dev/null || true
		wait "$PROM_PID" 2>/dev/null || true
		grep -q 'address already in use' "$HTMP/$name/log" ||
			fail "$name: prometheus did not start: $(tail -5 "$HTMP/$name/log")"
	done
	fail "$name: no free port for prometheus after 8 tries"
}

# query EXPR: the value of the first result of an instant query, or "".
query() {
	curl -sS --max-time 5 -G "http://$PROM/api/v1/query" --data-urlencode "query=$1" |
		python3 -c '
import json, sys
d = json.load(sys.stdin)
r = d.get("data", {}).get("result", [])
print(r[0]["value"][1] if d.get("status") == "success" and r else "")'
}

# wait_for EXPR: poll until the query has a result (20 s at most).
wait_for() {
	local i v
	for i in $(seq 80); do
		v=$(query "$1")
		if [ -n "$v" ]; then
			echo "$v"
			return 0
		fi
		sleep 0.25
	done
	fail "no result for '$1' after 20 s: $(tail -5 "$HTMP/$NAME/log")"
}

# in_range V LO HI: LO <= V <= HI (floats).
in_range() {
	awk -v v="$1" -v l="$2" -v h="$3" 'BEGIN { exit !(v >= l && v <= h) }'
}

stop_prometheus() {
	kill -TERM "$PROM_PID" 2>/dev/null || true
	wait "$PROM_PID" 2>/dev/null || true
}

# See http_endpoints_test.sh for the 0.6..1.6 x 4 MiB bound (R = 64 KiB,
# fixed seed).
start_prog prom rate=65536,seed=7
pid=$PID

NAME=text
start_prometheus text
[ "$(wait_for 'up{job="allocprof"} == 1')" = 1 ] || fail "text: target not up"
inuse=$(wait_for allocprof_inuse_bytes)
in_range "$inuse" 2516582 6710886 || fail "text: allocprof_inuse_bytes = $inuse"
lo=$(wait_for 'allocprof_inuse_bytes_lower{level="0.95"}')
hi=$(wait_for 'allocprof_inuse_bytes_upper{level="0.95"}')
in_range "$inuse" "$lo" "$hi" || fail "text: $inuse outside [$lo, $hi]"
# The program keeps churning: allocations grow between scrapes.
sleep 2.5
rate=$(wait_for 'rate(allocprof_allocated_bytes_total[5s])')
in_range "$rate" 1 1e12 || fail "text: allocation rate $rate"
# One query, so both series come from the same scrape.
d=$(wait_for 'allocprof_allocation_size_bytes_bucket{le="+Inf"} - ignoring(le) allocprof_allocation_size_bytes_count')
[ "$d" = 0 ] || fail "text: +Inf bucket - count = $d"
samples=$(wait_for 'scrape_samples_scraped{job="allocprof"}')
in_range "$samples" 40 1000 || fail "text: $samples samples per scrape"
stop_prometheus

NAME=native
start_prometheus native --enable-feature=native-histograms
inuse=$(wait_for allocprof_inuse_bytes)
in_range "$inuse" 2516582 6710886 || fail "native: allocprof_inuse_bytes = $inuse"
# A native histogram answers histogram_count(); a classic one does not.
count=$(wait_for 'histogram_count(allocprof_allocation_size_bytes)')
in_range "$count" 1 1e15 || fail "native: histogram_count = $count"
# Half the allocations are the churn's 48..144-byte nodes: the median
# size must fall among them (native buckets are ~9% wide).
med=$(wait_for 'histogram_quantile(0.5, allocprof_allocation_size_bytes)')
in_range "$med" 40 160 || fail "native: median allocation size $med"
stop_prometheus

stop_prog prom "$pid"
echo "http prometheus: ok"
