/*
 * heapprof.c: the conventions that make an ap_profile an allocprof heap
 * profile (allocprof/profile.h): its sample types, the values each sample
 * carries, and the histograms kept in its comments. The runtime writes
 * profiles through these functions and the command and the statistical
 * tests read and build them through the same ones, so the wire layout has a
 * single definition.
 */
#include "allocprof/codec.h"
#include "allocprof/profile.h"

#include <math.h>
#include <string.h>

int ap_profile_init_heap(ap_profile *p, int64_t period)
{
	static const char *const types[][2] = {
		{ AP_ST_ALLOC_OBJECTS, "count" }, { AP_ST_ALLOC_SPACE, "bytes" },
		{ AP_ST_INUSE_OBJECTS, "count" }, { AP_ST_INUSE_SPACE, "bytes" },
		{ AP_ST_ALLOC_SAMPLES, "count" }, { AP_ST_ALLOC_U, "bytes" },
		{ AP_ST_ALLOC_SPACE_VAR, "bytes^2" },
		{ AP_ST_ALLOC_OBJECTS_VAR, "count^2" },
		{ AP_ST_INUSE_SAMPLES, "count" }, { AP_ST_INUSE_U, "bytes" },
		{ AP_ST_INUSE_SPACE_VAR, "bytes^2" },
		{ AP_ST_INUSE_OBJECTS_VAR, "count^2" },
		{ AP_ST_ALLOC_USABLE, "bytes" }, { AP_ST_INUSE_USABLE, "bytes" },
	};
	_Static_assert(sizeof types / sizeof types[0] == AP_HEAP_NVALUES,
		       "ap_heap_sums_encode writes one value per sample type");
	if (!p || period <= 0 || p->nsample_types || p->nsamples)
		return AP_EINVAL;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		int rc = ap_profile_add_sample_type(p, types[i][0], types[i][1]);
		if (rc < 0)
			return rc;
	}
	int64_t t = ap_profile_intern(p, "space");
	int64_t u = t < 0 ? t : ap_profile_intern(p, "bytes");
	int64_t d = u < 0 ? u : ap_profile_intern(p, AP_ST_INUSE_SPACE);
	if (d < 0)
		return (int)d;
	p->period_type.type = t;
	p->period_type.unit = u;
	p->period = period;
	p->default_sample_type = d;
	return 0;
}

/*
 * Sums are doubles; the wire wants integers. A view whose terms were all
 * added and subtracted again leaves float residue (tiny positive or
 * negative), which must print as 0, not as -0 or 1.
 */
static int64_t round_sum(double x)
{
	if (!(x > 0.5)) /* also NaN */
		return 0;
	if (x >= 9.2e18)
		return INT64_MAX;
	return (int64_t)llround(x);
}

void ap_heap_sums_encode(const ap_heap_sums *alloc, const ap_heap_sums *inuse,
			 int64_t values[AP_HEAP_NVALUES])
{
	const ap_heap_sums *a = alloc, *u = inuse;
	bool live = u->samples > 0;
	values[0] = round_sum(a->objects);
	values[1] = round_sum(a->space);
	values[2] = live ? round_sum(u->objects) : 0;
	values[3] = live ? round_sum(u->space) : 0;
	values[4] = (int64_t)a->samples;
	values[5] = round_sum(a->u);
	values[6] = round_sum(a->space_var);
	values[7] = round_sum(a->objects_var);
	values[8] = (int64_t)u->samples;
	values[9] = live ? round_sum(u->u) : 0;
	values[10] = live ? round_sum(u->space_var) : 0;
	values[11] = live ? round_sum(u->objects_var) : 0;
	values[12] = round_sum(a->usable);
	values[13] = live ? round_sum(u->usable) : 0;
}

/* ---- histogram comments ---------------------------------------------- */

int ap_profile_hist_comment_add(ap_profile *p, const char *name,
				const ap_hist_snap *snap)
{
	if (!p || !name || !name[0] || strchr(name, '=') || !snap)
		return AP_EINVAL;
	const ap_allocator *al = ap_profile_allocator(p);
	unsigned char *bin = NULL;
	char *b64 = NULL, *text = NULL;
	size_t bin_len = 0, b64_len = 0, need = 0;
	int rc = ap_hist_encode(snap, al, &bin, &bin_len);
	if (rc == 0)
		rc = ap_base64_encode(bin, bin_len, al, &b64, &b64_len);
	if (rc == 0) {
		size_t plen = strlen(AP_COMMENT_HIST_PREFIX), nlen = strlen(name);
		need = plen + nlen + 1 + b64_len + 1;
		text = al->alloc(al->ctx, need);
		if (!text) {
			rc = AP_ENOMEM;
		} else {
			memcpy(text, AP_COMMENT_HIST_PREFIX, plen);
			memcpy(text + plen, name, nlen);
			text[plen + nlen] = '=';
			memcpy(text + plen + nlen + 1, b64, b64_len + 1);
			rc = ap_profile_add_comment(p, text);
		}
	}
	if (text)
		al->free(al->ctx, text, need);
	if (b64)
		al->free(al->ctx, b64, b64_len + 1);
	if (bin)
		ap_hist_buffer_free(al, bin, bin_len);
	return rc;
}

int ap_profile_hist_comment_decode(const char *comment,
				   const ap_allocator *alloc, char **name,
				   ap_hist_snap **snap)
{
	if (!name || !snap)
		return AP_EINVAL;
	*name = NULL;
	*snap = NULL;
	if (!comment)
		return AP_EINVAL;
	const ap_allocator *al = alloc ? alloc : ap_allocator_libc();
	size_t plen = strlen(AP_COMMENT_HIST_PREFIX);
	const char *eq;
	if (strncmp(comment, AP_COMMENT_HIST_PREFIX, plen) ||
	    !(eq = strchr(comment + plen, '=')) || eq == comment + plen)
		return AP_ENOTFOUND;
	unsigned char *bin = NULL;
	size_t blen = 0;
	int rc = ap_base64_decode(eq + 1, strlen(eq + 1), al, &bin, &blen);
	if (rc)
		return rc == AP_ENOMEM ? rc : AP_ECORRUPT;
	rc = ap_hist_decode(bin, blen, al, snap);
	al->free(al->ctx, bin, blen + 1);
	if (rc) {
		*snap = NULL;
		return rc == AP_ENOMEM ? rc : AP_ECORRUPT;
	}
	size_t nlen = (size_t)(eq - comment) - plen;
	char *n = al->alloc(al->ctx, nlen + 1);
	if (!n) {
		ap_hist_snap_destroy(*snap);
		*snap = NULL;
		return AP_ENOMEM;
	}
	memcpy(n, comment + plen, nlen);
	n[nlen] = '\0';
	*name = n;
	return 0;
}
