/*
 * config_extra.c: parsers of rss_limit= and push= (config_extra.h).
 */
#include "config_extra.h"

#include <stdio.h>
#include <string.h>

#include "allocprof/options.h"

int rt_parse_limit(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	rt_limit l = { 0, 0 };
	uint64_t x;
	if (n > 1 && v[n - 1] == '%') {
		if (ap_options_parse_u64(v, n - 1, &x) != 0 || x < 1 || x > 100)
			goto bad;
		l.percent = (uint32_t)x;
	} else {
		if (ap_options_parse_size(v, n, &x) != 0)
			goto bad;
		l.bytes = x;
	}
	*(rt_limit *)dst = l;
	return 0;
bad:
	snprintf(err, errlen, "bytes (k/m/g suffixes; 0 = off) or 1%%-100%% of the "
		 "cgroup's limit");
	return AP_EINVAL;
}

static bool path_char(char c)
{
	return c > ' ' && c < 127 && c != '#';
}

int rt_parse_push_url(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	static const char scheme[] = "http://";
	const size_t sn = sizeof scheme - 1;
	rt_push_url u;
	memset(&u, 0, sizeof u);
	if (n == 3 && memcmp(v, "off", 3) == 0) {
		*(rt_push_url *)dst = u;
		return 0;
	}
	if (n <= sn || memcmp(v, scheme, sn) != 0)
		goto bad;
	const char *host = v + sn, *end = v + n;
	const char *slash = memchr(host, '/', (size_t)(end - host));
	const char *hend = slash ? slash : end;
	/* The authority, with ":80" when it names no port. */
	char auth[80];
	size_t an = (size_t)(hend - host);
	const char *bracket = memchr(host, ']', an);
	const char *after = bracket ? bracket + 1 : host;
	bool has_port = memchr(after, ':', (size_t)(hend - after)) != NULL;
	if (an == 0 || an + 4 >= sizeof auth)
		goto bad;
	memcpy(auth, host, an);
	if (!has_port) {
		memcpy(auth + an, ":80", 3);
		an += 3;
	}
	char why[8];
	if (http_parse_listen(auth, an, &u.to, why, sizeof why) != 0 || u.to.port == 0)
		goto bad;
	size_t pn = slash ? (size_t)(end - slash) : 0;
	if (pn >= sizeof u.path)
		goto bad;
	for (size_t i = 0; i < pn; i++)
		if (!path_char(slash[i]))
			goto bad;
	if (pn)
		memcpy(u.path, slash, pn);
	else
		memcpy(u.path, "/ingest", sizeof "/ingest");
	u.to.enabled = true;
	*(rt_push_url *)dst = u;
	return 0;
bad:
	snprintf(err, errlen, "http://ADDR[:PORT][/PATH] (numeric address or "
		 "localhost; no https), or off");
	return AP_EINVAL;
}
