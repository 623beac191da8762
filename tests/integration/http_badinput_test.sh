#!/usr/bin/env bash
# http_badinput_test.sh: the HTTP endpoint under malformed, oversized, slow,
# aborted and concurrent requests: each gets its status (400, 404, 405,
# 408, 431, 505) or a clean close, a slow client holds up no one else, and
# afterwards the server still answers and the program's output and exit
# status are those of a plain run. Requests are written with bash's
# /dev/tcp and curl. (AP_TEST_PRELOAD: needs the runtime.)
. "$(dirname "$0")/http_endpoints_test.sh"

# raw NAME BYTES...: send printf-formatted bytes on a fresh connection, close
# our sending side, and print the status code of the answer ("" if none).
raw() {
	local name=$1
	shift
	local host=${ADDR%:*} port=${ADDR##*:}
	(
		exec 3<>"/dev/tcp/$host/$port"
		printf "$@" >&3
		timeout 10 cat <&3 >"$HTMP/$name.raw" || true
		exec 3>&-
	) || true
	awk 'NR == 1 { print $2 }' "$HTMP/$name.raw"
}

expect_raw() {
	local want=$1 got
	shift
	got=$(raw "$@")
	[ "$got" = "$want" ] || fail "$1: status '$got', expected $want: $(head -c 300 "$HTMP/$1.raw")"
}

start_prog bad
pid=$PID

expect_raw 400 garbage 'hello\r\n\r\n'
expect_raw 400 tls '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03'
expect_raw 400 nohost 'GET /metrics HTTP/1.1\r\n\r\n'
expect_raw 400 spacecolon 'GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n'
expect_raw 400 fold 'GET /metrics HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n'
expect_raw 400 nul 'GET /metrics HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n'
expect_raw 505 http2 'GET /metrics HTTP/2.0\r\n\r\n'
expect_raw 404 notfound 'GET /debug/pprof/goroutine HTTP/1.0\r\n\r\n'
expect_raw 405 post 'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello'
expect_raw 400 twolengths 'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello'
expect_raw 405 delete 'DELETE /debug/pprof/heap HTTP/1.0\r\n\r\n'
expect_raw 200 http10 'GET /metrics HTTP/1.0\r\n\r\n'
grep -q '^allocprof_inuse_bytes ' "$HTMP/http10.raw" || fail "HTTP/1.0 scrape has no metrics"

# Oversized: a 20 KB header line (limit 8 KiB) and 40 fields (limit 32).
code=$(fetch /metrics "$HTMP/big.out" -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)")
[ "$code" = 431 ] || fail "20 KB header: status $code"
fields=()
for i in $(seq 40); do fields+=(-H "X-F$i: v"); done
code=$(fetch /metrics "$HTMP/many.out" "${fields[@]}")
[ "$code" = 431 ] || fail "40 header fields: status $code"

# Aborted clients: connect and leave; send half a request and leave.
(exec 3<>"/dev/tcp/${ADDR%:*}/${ADDR##*:}"; exec 3>&-) || true
(exec 3<>"/dev/tcp/${ADDR%:*}/${ADDR##*:}"; printf 'GET /met' >&3; exec 3>&-) || true

# A slow client: half a request, then silence. Others are served meanwhile;
# it gets 408 once its 5 s are up.
host=${ADDR%:*} port=${ADDR##*:}
(
	exec 3<>"/dev/tcp/$host/$port"
	printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n' >&3
	timeout 15 cat <&3 >"$HTMP/slow.raw" || true
) &
slow=$!
sleep 0.3
t0=$(date +%s%N)
code=$(fetch /metrics "$HTMP/during.out")
t1=$(date +%s%N)
[ "$code" = 200 ] || fail "scrape during a slow client: status $code"
[ $(( (t1 - t0) / 1000000 )) -lt 2000 ] ||
	fail "scrape took $(( (t1 - t0) / 1000000 )) ms behind a slow client"
wait $slow
grep -q '^HTTP/1.1 408 ' "$HTMP/slow.raw" ||
	fail "slow client: $(head -c 200 "$HTMP/slow.raw")"

# Concurrent: 12 clients at once (fewer than the 16 slots) all get 200;
# 40 at once get 200 or 503 (slots full), never anything else.
burst() {
	local n=$1 i
	for i in $(seq "$n"); do
		case $((i % 3)) in
		0) p=/metrics ;;
		1) p=/debug/pprof/heap ;;
		*) p=/debug/pprof/allocs ;;
		esac
		curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' "http://$ADDR$p" \
			>"$HTMP/burst.$n.$i" 2>&1 &
	done
	wait
	cat "$HTMP"/burst."$n".* | sort | uniq -c >"$HTMP/burst.$n"
}
# wait above must not wait for the program: burst runs in a subshell.
(burst 12)
[ "$(awk '$2 == 200 { print $1 }' "$HTMP/burst.12")" = 12 ] ||
	fail "12 concurrent requests: $(cat "$HTMP/burst.12")"
(burst 40)
awk '$2 != 200 && $2 != 503 { bad = 1 } $2 == 200 { ok = $1 } END { exit bad || ok < 1 }' \
	"$HTMP/burst.40" || fail "40 concurrent requests: $(cat "$HTMP/burst.40")"

# Still serving, and the program is unharmed.
code=$(fetch /metrics "$HTMP/after.txt")
[ "$code" = 200 ] || fail "after the abuse: status $code"
# Every answered request is counted once (503s are refused before
# parsing, aborted ones never answered; this scrape counts after itself):
# 12 raw, 2 oversized, 1 during the slow client, 12 + the 40-burst's 200s.
ok40=$(awk '$2 == 200 { print $1 }' "$HTMP/burst.40")
requests=$(metric allocprof_http_requests_total "$HTMP/after.txt")
[ "$requests" = $((27 + ok40)) ] ||
	fail "allocprof_http_requests_total = $requests, expected $((27 + ok40))"
stop_prog bad "$pid"
echo "http bad input: ok"
