#!/usr/bin/env bash
# preload_servers_test.sh: two production servers from Debian, as an SRE
# runs them, when they are installed (each part is skipped otherwise; the
# whole test when neither is). scripts/deps.sh does not install them: on a
# machine with systemd, Debian starts and enables both services at
# installation, which a test suite has no business doing. To run this
# test: apt-get install nginx-light redis-server redis-tools.
#  - nginx: daemonizes (the starting process exits), a root master forks
#    two workers that switch to another user, `-s reload` replaces the
#    workers, `-s quit` ends them all. Every one of those processes must
#    leave a profile that decodes (the workers' owned by their user), the
#    workers' naming nginx's own functions, and the server must answer
#    every request meanwhile.
#  - redis-server over Debian's jemalloc (it calls mallctl, nallocx and
#    malloc_usable_size itself): a benchmark, the HTTP endpoint's
#    /metrics, a BGSAVE (a fork child that writes its own profile) and a
#    shutdown. The server's profile must name redis's own allocating
#    functions once its wrappers are skipped.
# AP_TEST_PRELOAD: needs the runtime.
. "$(dirname "$0")/preload_smoke_test.sh"

ran=0

# wait_file FILE: until FILE exists (at most 10 s).
wait_file() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# port_free: a TCP port nothing listens on now.
port_free() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

if command -v nginx >/dev/null && [ "$(id -u)" = 0 ]; then
	ran=1
	N=$TMP/nginx
	mkdir -p "$N/prof" "$N/tmp"
	# The workers run as another user: they must reach the directory.
	chmod 755 "$TMP" "$N"
	chmod 777 "$N/prof"
	port=$(port_free)
	cat >"$N/nginx.conf" <<CONF
worker_processes 2;
pid $N/nginx.pid;
error_log $N/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $N/tmp;
  proxy_temp_path $N/tmp;
  fastcgi_temp_path $N/tmp;
  uwsgi_temp_path $N/tmp;
  scgi_temp_path $N/tmp;
  server { listen 127.0.0.1:$port; location / { return 200 "hello\n"; } }
}
CONF
	bounded 30 env LD_PRELOAD="$LIB" ALLOCPROF_OPTIONS="rate=4096,output=$N/prof/n.%p.pb.gz" \
		nginx -c "$N/nginx.conf" 2>"$N/start.err" || fail "nginx: cannot start: $(cat "$N/start.err")"
	wait_file "$N/nginx.pid" || fail "nginx: no pid file: $(cat "$N/error.log")"
	master=$(cat "$N/nginx.pid")
	get() {
		local i body
		for ((i = 0; i < 50; i++)); do
			body=$(curl -s --max-time 5 "http://127.0.0.1:$port/") && [ "$body" = hello ] && return 0
			sleep 0.1
		done
		fail "nginx: no answer on port $port: $(tail -3 "$N/error.log")"
	}
	for i in $(seq 100); do get; done
	first=$(pgrep -P "$master" | sort | tr '\n' ' ')
	nginx -c "$N/nginx.conf" -s reload 2>/dev/null || fail "nginx: reload failed"
	for ((i = 0; i < 100; i++)); do
		now=$(pgrep -P "$master" | sort | tr '\n' ' ')
		[ -n "$now" ] && [ "$now" != "$first" ] && break
		sleep 0.1
	done
	for i in $(seq 100); do get; done
	second=$(pgrep -P "$master" | sort | tr '\n' ' ')
	nginx -c "$N/nginx.conf" -s quit 2>/dev/null || fail "nginx: quit failed"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$master" 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 "$master" 2>/dev/null || fail "nginx: the master did not quit"
	for pid in $master $first $second; do
		f=$N/prof/n.$pid.pb.gz
		[ -s "$f" ] || fail "nginx: no profile of process $pid: $(ls "$N/prof")"
		check_readable "$f"
	done
	for pid in $first $second; do
		owner=$(stat -c %U "$N/prof/n.$pid.pb.gz")
		[ "$owner" != root ] || fail "nginx: worker $pid's profile is root's: the worker did not switch user"
		"$CLI" report --alloc --top 0 "$N/prof/n.$pid.pb.gz" 2>/dev/null | grep -q ' ngx_' ||
			fail "nginx: worker $pid's profile names no ngx_ function"
	done
	# The process that started nginx and exited (the daemonizing parent).
	n=$(ls "$N/prof" | wc -l)
	[ "$n" -ge 6 ] || fail "nginx: $n profiles, want the starter, the master and four workers"
	echo "nginx: $n profiles ok" >&2
fi

if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	ran=1
	R=$TMP/redis
	mkdir -p "$R"
	port=$(port_free)
	timeout --kill-after=5 120 env LD_PRELOAD="$LIB" \
		ALLOCPROF_OPTIONS="rate=4096,output=$R/r.%p.pb.gz,http=127.0.0.1:0,http_portfile=$R/port" \
		redis-server --port "$port" --bind 127.0.0.1 --save "" --dir "$R" \
		--daemonize no --io-threads 2 >"$R/log" 2>&1 &
	w=$!
	for ((i = 0; i < 100; i++)); do
		[ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
		sleep 0.1
	done
	[ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] || fail "redis: no answer: $(tail -3 "$R/log")"
	pid=$(redis-cli -p "$port" info server | awk -F: '/^process_id/ { print $2 }' | tr -d '\r')
	bounded 60 redis-benchmark -p "$port" -q -n 20000 -t set,get,lpush,sadd,hset -d 200 \
		>"$R/bench" 2>&1 || fail "redis: benchmark failed: $(tail -3 "$R/bench")"
	wait_file "$R/port" || fail "redis: no port file"
	code=$(curl -s --max-time 10 -o "$R/metrics" -w '%{http_code}' "http://$(cat "$R/port")/metrics")
	[ "$code" = 200 ] && grep -q '^allocprof_' "$R/metrics" || fail "redis: /metrics answered $code"
	[ "$(redis-cli -p "$port" bgsave)" = "Background saving started" ] || fail "redis: bgsave refused"
	for ((i = 0; i < 100; i++)); do
		grep -q "Background saving terminated with success" "$R/log" && break
		sleep 0.1
	done
	grep -q "Background saving terminated with success" "$R/log" || fail "redis: BGSAVE failed: $(tail -3 "$R/log")"
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait "$w" || fail "redis: exit status $?: $(tail -3 "$R/log")"
	[ -s "$R/r.$pid.pb.gz" ] || fail "redis: no profile of the server: $(ls "$R")"
	check_readable "$R/r.$pid.pb.gz"
	n=$(ls "$R"/r.*.pb.gz | wc -l)
	[ "$n" -ge 2 ] || fail "redis: $n profiles, want the server's and the BGSAVE child's"
	"$CLI" report --alloc --top 0 --skip '^z(try)?(malloc|calloc|realloc)' "$R/r.$pid.pb.gz" \
		>"$R/report" 2>&1 || fail "redis: report: $(head -3 "$R/report")"
	grep -q '_sdsnewlen\|createStringObject\|createEmbeddedStringObject' "$R/report" ||
		fail "redis: the report names none of redis's functions: $(head -8 "$R/report")"
	echo "redis: $n profiles ok" >&2
fi

[ $ran = 1 ] || skip "neither nginx (as root) nor redis-server is installed"
echo "preload servers: ok"
