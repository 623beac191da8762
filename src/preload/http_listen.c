/*
 * http_listen.c: the http= option of ALLOCPROF_OPTIONS (http.h): parsing
 * "PORT", "ADDR:PORT" and "[IPv6]:PORT" into an http_listen, and printing
 * one back. Numeric addresses only (and "localhost"): the runtime does no
 * DNS, which could block or allocate inside the profiled program.
 */
#include "http.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "allocprof/options.h"

int http_parse_listen(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	/* Kept short: the option parser's message holds about 90 bytes of it. */
	static const char what[] =
		"PORT, ADDR:PORT or [IPv6]:PORT (numeric or localhost; port "
		"0-65535, 0 = any), or off";
	http_listen l;
	memset(&l, 0, sizeof l);
	if (n == 3 && memcmp(v, "off", 3) == 0) {
		*(http_listen *)dst = l;
		return 0;
	}
	const char *port = v;
	size_t port_n = n;
	char host[64];
	bool have_host = false;
	if (n > 0 && v[0] == '[') {
		const char *close = memchr(v, ']', n);
		if (!close || close + 1 >= v + n || close[1] != ':' ||
		    (size_t)(close - v - 1) >= sizeof host)
			goto bad;
		memcpy(host, v + 1, (size_t)(close - v - 1));
		host[close - v - 1] = '\0';
		if (inet_pton(AF_INET6, host, l.addr) != 1)
			goto bad;
		l.v6 = true;
		port = close + 2;
		port_n = n - (size_t)(port - v);
	} else {
		const char *colon = NULL;
		for (size_t i = 0; i < n; i++)
			if (v[i] == ':')
				colon = v + i;
		if (colon) {
			size_t hn = (size_t)(colon - v);
			if (hn == 0 || hn >= sizeof host)
				goto bad;
			memcpy(host, v, hn);
			host[hn] = '\0';
			have_host = true;
			port = colon + 1;
			port_n = n - hn - 1;
		}
		if (!have_host || strcmp(host, "localhost") == 0)
			memcpy(host, "127.0.0.1", 10);
		if (inet_pton(AF_INET, host, l.addr) != 1)
			goto bad;
	}
	uint64_t p;
	if (ap_options_parse_u64(port, port_n, &p) != 0 || p > 65535)
		goto bad;
	l.port = (uint16_t)p;
	l.enabled = true;
	*(http_listen *)dst = l;
	return 0;
bad:
	snprintf(err, errlen, "%s", what);
	return AP_EINVAL;
}

void http_listen_format(const http_listen *l, uint16_t port, char *buf, size_t cap)
{
	char a[INET6_ADDRSTRLEN];
	if (!inet_ntop(l->v6 ? AF_INET6 : AF_INET, l->addr, a, sizeof a))
		memcpy(a, "?", 2);
	snprintf(buf, cap, l->v6 ? "[%s]:%u" : "%s:%u", a, (unsigned)port);
}

bool http_listen_is_loopback(const http_listen *l)
{
	if (!l->v6)
		return l->addr[0] == 127;
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (memcmp(l->addr, mapped, sizeof mapped) == 0)
		return l->addr[12] == 127;
	for (int i = 0; i < 15; i++)
		if (l->addr[i])
			return false;
	return l->addr[15] == 1;
}
