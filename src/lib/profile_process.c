/*
 * profile_process.c: the identity of the process a heap profile came from,
 * stored as one pprof comment (allocprof/profile.h, ap_process_id). Tools
 * that merge or report several dumps use it to keep only the latest dump
 * of each process: interval and peak dumps are cumulative, and adding
 * them up counts every early sample once per later dump.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include "allocprof/profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ap_profile_set_process(ap_profile *p, const ap_process_id *id)
{
	if (!p || !id)
		return AP_EINVAL;
	size_t n = strnlen(id->boot_id, sizeof id->boot_id);
	if (n == sizeof id->boot_id || strpbrk(id->boot_id, ";="))
		return AP_EINVAL;
	char text[160];
	snprintf(text, sizeof text,
		 AP_COMMENT_PROCESS_PREFIX "pid=%" PRId64 ";start=%" PRIu64
		 ";boot=%s;seq=%" PRIu64,
		 id->pid, id->start_ns, id->boot_id, id->seq);
	return ap_profile_add_comment(p, text);
}

/* "key=" at *s: parse up to ';' or the end into (buf, n); advance *s. */
static int field(const char **s, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);
	if (strncmp(*s, key, kl) || (*s)[kl] != '=')
		return AP_ECORRUPT;
	const char *v = *s + kl + 1, *e = strchr(v, ';');
	size_t len = e ? (size_t)(e - v) : strlen(v);
	if (len >= n)
		return AP_ECORRUPT;
	memcpy(buf, v, len);
	buf[len] = 0;
	*s = e ? e + 1 : v + len;
	return 0;
}

static int number(const char *d, uint64_t *out)
{
	char *end;
	if (*d < '0' || *d > '9')
		return AP_ECORRUPT;
	*out = strtoull(d, &end, 10);
	return *end ? AP_ECORRUPT : 0;
}

int ap_profile_get_process(const ap_profile *p, ap_process_id *id)
{
	if (!p || !id)
		return AP_EINVAL;
	memset(id, 0, sizeof *id);
	size_t pl = strlen(AP_COMMENT_PROCESS_PREFIX);
	for (size_t i = 0; i < p->ncomments; i++) {
		const char *c = ap_profile_string(p, p->comments[i]);
		if (!c || strncmp(c, AP_COMMENT_PROCESS_PREFIX, pl))
			continue;
		const char *s = c + pl;
		char pid[24], start[24], seq[24];
		uint64_t v;
		if (field(&s, "pid", pid, sizeof pid) ||
		    field(&s, "start", start, sizeof start) ||
		    field(&s, "boot", id->boot_id, sizeof id->boot_id) ||
		    field(&s, "seq", seq, sizeof seq) || *s)
			return AP_ECORRUPT;
		if (number(pid, &v) || v > INT64_MAX)
			return AP_ECORRUPT;
		id->pid = (int64_t)v;
		if (number(start, &id->start_ns) ||
		    number(seq, &id->seq))
			return AP_ECORRUPT;
		return 0;
	}
	return AP_ENOTFOUND;
}

bool ap_process_same(const ap_process_id *a, const ap_process_id *b)
{
	return a->pid == b->pid && a->start_ns == b->start_ns &&
	       !strncmp(a->boot_id, b->boot_id, sizeof a->boot_id);
}
