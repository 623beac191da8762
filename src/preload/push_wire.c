/*
 * push_wire.c: the request push= sends and the status line it reads
 * (push.h); pure, for tests and the fuzz target.
 */
#include "push.h"

#include <stdio.h>
#include <string.h>

/* Percent-encode s into out (RFC 3986 unreserved characters kept). */
static bool url_encode(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t j = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
			    c == '_' || c == '~';
		if (j + (keep ? 1 : 3) >= cap)
			return false;
		if (keep) {
			out[j++] = (char)c;
		} else {
			out[j++] = '%';
			out[j++] = hex[c >> 4];
			out[j++] = hex[c & 15];
		}
	}
	out[j] = '\0';
	return true;
}

int push_format_head(char *buf, size_t cap, size_t *len, const rt_push_url *u,
		     const char *app, uint64_t from_s, uint64_t until_s,
		     size_t body_len)
{
	char enc[3 * PUSH_NAME_CAP], host[80];
	if (!url_encode(app, enc, sizeof enc))
		return AP_ERANGE;
	http_listen_format(&u->to, u->to.port, host, sizeof host);
	int n = snprintf(buf, cap,
			 "POST %s%sname=%s&from=%llu&until=%llu&format=pprof"
			 "&spyName=allocprof HTTP/1.1\r\nHost: %s\r\n"
			 "User-Agent: allocprof\r\n"
			 "Content-Type: application/octet-stream\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			 u->path, strchr(u->path, '?') ? "&" : "?", enc,
			 (unsigned long long)from_s, (unsigned long long)until_s,
			 host, body_len);
	if (n < 0 || (size_t)n >= cap)
		return AP_ERANGE;
	*len = (size_t)n;
	return 0;
}

int push_parse_status(const char *buf, size_t n)
{
	if (n < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
		return -1;
	int code = 0;
	for (int i = 9; i < 12; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
		code = code * 10 + (buf[i] - '0');
	}
	return code >= 100 ? code : -1;
}
