/*
 * config_extra.h: values of the memory-trigger and push options of
 * ALLOCPROF_OPTIONS (rss_limit=, push=) and their parsers, AP_OPT_CUSTOM
 * rows of config.c's table. Part of the options library, so `allocprof run
 * -e` checks them exactly as the runtime does.
 */
#ifndef AP_PRELOAD_CONFIG_EXTRA_H
#define AP_PRELOAD_CONFIG_EXTRA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

/* rss_limit=: a size in bytes, or a percentage of the cgroup's limit. */
typedef struct rt_limit {
	uint64_t bytes;   /* 0 = off (or given as a percentage) */
	uint32_t percent; /* 1..100; 0 = given in bytes */
} rt_limit;

int rt_parse_limit(const char *v, size_t n, void *dst, char *err, size_t errlen);

/* push=http://HOST[:PORT][/PATH[?QUERY]] */
#define RT_PUSH_PATH_CAP 512
typedef struct rt_push_url {
	http_listen to;                /* .enabled false = off */
	char path[RT_PUSH_PATH_CAP];   /* "/ingest" when the URL has none */
} rt_push_url;

/*
 * Plain http:// only, numeric addresses or localhost (no DNS inside the
 * program), port 1-65535 (default 80); the path and query may hold
 * printable ASCII other than space and '#'. "off" disables.
 */
int rt_parse_push_url(const char *v, size_t n, void *dst, char *err, size_t errlen);

#endif
