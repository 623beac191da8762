/*
 * preload_procmem_fuzz.c: libFuzzer target for the runtime's readers of
 * /proc and cgroup files (procmem.h), the push= URL and rss_limit= option
 * parsers (config_extra.h) and the push status-line parser (push.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config_extra.h"
#include "procmem.h"
#include "push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	uint64_t v;
	uint32_t c;
	char path[64], err[200];
	procmem_kb_field(s, size, "Rss:", &v);
	procmem_nth_u64(s, size, 1, &v);
	if (procmem_cgroup_path(s, size, size & 1, path, sizeof path) &&
	    (path[0] != '/' || strstr(path, "..") || !memchr(path, 0, sizeof path)))
		abort();
	if (procmem_psi_parse(s, size, &c) && c > 10099)
		abort();
	rt_push_url u;
	if (rt_parse_push_url(s, size, &u, err, sizeof err) == 0 &&
	    (!memchr(u.path, 0, sizeof u.path) || (u.to.enabled && u.path[0] != '/')))
		abort();
	rt_limit l;
	if (rt_parse_limit(s, size, &l, err, sizeof err) == 0 && l.percent > 100)
		abort();
	int st = push_parse_status(s, size);
	if (st != -1 && (st < 100 || st > 999))
		abort();
	return 0;
}
