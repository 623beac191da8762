/*
 * profload.c: loading profiles (profload.h). Telling formats apart is the
 * library's business: ap_profile_decode_any gunzips first and only then
 * looks for the heap_v2 header, so a gzip'd heap_v2 file loads like a
 * plain one (sniffing the raw bytes here once sent it to the pprof
 * decoder).
 */
#define _GNU_SOURCE
#include "profload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/heapv2.h" /* ap_profile_decode_any */
#include "cli_util.h"
#include "profmerge.h"
#include "symbolize.h"

static int load_one(const char *path, ap_profile **out, char *err,
		    size_t errlen)
{
	unsigned char *buf;
	size_t len;
	char why[256] = "";
	if (ap_read_file(path, &buf, &len)) {
		ap_cli_seterr(err, errlen, "%s: %s", path, strerror(errno));
		return AP_EIO;
	}
	if (len == 0) {
		free(buf);
		ap_cli_seterr(err, errlen, "%s: empty file, not a profile", path);
		return AP_ECORRUPT;
	}
	bool text = false;
	int rc = ap_profile_decode_any(buf, len, NULL, out, &text, why,
				       sizeof why);
	free(buf);
	if (rc) {
		ap_cli_seterr(err, errlen, "%s: not a valid %s profile: %s", path,
		       text ? "heap_v2" : "pprof", why[0] ? why : ap_strerror(rc));
		return rc == AP_ENOMEM ? rc : AP_ECORRUPT;
	}
	if (ap_profile_find_sample_type(*out, AP_ST_ALLOC_SPACE) < 0 &&
	    ap_profile_find_sample_type(*out, AP_ST_INUSE_SPACE) < 0) {
		char types[160] = "";
		size_t used = 0;
		for (size_t i = 0; i < (*out)->nsample_types && used < 120; i++)
			used += (size_t)snprintf(
				types + used, sizeof types - used, "%s%s/%s",
				i ? ", " : "",
				ap_profile_string(*out, (*out)->sample_types[i].type),
				ap_profile_string(*out, (*out)->sample_types[i].unit));
		ap_cli_seterr(err, errlen,
		       "%s: not a heap profile (sample types: %s)", path,
		       types[0] ? types : "none");
		ap_profile_destroy(*out);
		*out = NULL;
		return AP_ECORRUPT;
	}
	return 0;
}

/*
 * Several dumps of one process (same pid, start and boot id) are
 * cumulative: adding them counts every early sample once per later dump
 * (issue 12: 535 MiB reported for 230 MiB allocated). Keep the latest
 * (highest sequence number) of each process, destroy the others, compact
 * ps, and say so in one line on stderr. Profiles without an identity
 * (other tools, older allocprof) are all kept. Returns the new count.
 */
static size_t keep_latest(ap_profile **ps, size_t n)
{
	ap_process_id *id = calloc(n, sizeof *id);
	bool *has = calloc(n, sizeof *has);
	size_t kept = 0, dropped = 0, procs = 0;
	if (!id || !has) {
		free(id);
		free(has);
		return n; /* out of memory here: merge them all, as before */
	}
	for (size_t i = 0; i < n; i++)
		has[i] = ap_profile_get_process(ps[i], &id[i]) == 0;
	for (size_t i = 0; i < n; i++) {
		bool older = false, first = true;
		for (size_t j = 0; has[i] && j < n; j++) {
			if (j == i || !has[j] || !ap_process_same(&id[i], &id[j]))
				continue;
			if (id[j].seq > id[i].seq || (id[j].seq == id[i].seq && j > i))
				older = true;
			if (j < i)
				first = false;
		}
		procs += has[i] && first;
		if (older) {
			ap_profile_destroy(ps[i]);
			dropped++;
		} else {
			ps[kept++] = ps[i];
		}
	}
	if (dropped)
		ap_cli_error("%zu of %zu profiles are earlier dumps of a process "
			     "given again later; using the latest dump of each "
			     "of %zu processes (dumps are cumulative)",
			     dropped, n, procs);
	free(id);
	free(has);
	return kept;
}

int hv_load_profiles(const char *const *paths, size_t n, ap_profile **out,
		     char *err, size_t errlen)
{
	ap_profile **ps = calloc(n ? n : 1, sizeof *ps);
	int rc = ps ? 0 : AP_ENOMEM;
	*out = NULL;
	if (!n) {
		ap_cli_seterr(err, errlen, "no profile given");
		rc = AP_EINVAL;
	}
	for (size_t i = 0; !rc && i < n; i++)
		rc = load_one(paths[i], &ps[i], err, errlen);
	if (!rc && n > 1)
		n = keep_latest(ps, n);
	if (!rc && n == 1) {
		*out = ps[0];
		ps[0] = NULL;
	} else if (!rc) {
		rc = hv_profile_merge(ps, n, out, err, errlen);
	}
	for (size_t i = 0; ps && i < n; i++)
		ap_profile_destroy(ps[i]);
	free(ps);
	return rc;
}

int hv_load_symbolized(const char *const *paths, size_t n, bool symbolize,
		       ap_profile **out, char *err, size_t errlen)
{
	ap_profile *p = NULL, *sp = NULL;
	int rc = hv_load_profiles(paths, n, &p, err, errlen);
	if (rc || !symbolize) {
		*out = p;
		return rc;
	}
	sym_options so;
	sym_options_default(&so);
	rc = sym_symbolize_profile(p, &so, &sp, NULL, err, errlen);
	ap_profile_destroy(p);
	*out = rc ? NULL : sp;
	return rc;
}

