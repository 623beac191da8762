/*
 * heapprof.c: the conventions that make an ap_profile an allocprof heap
 * profile (allocprof/profile.h): its sample types, the values each sample
 * carries, and the histograms kept in its comments. The runtime writes
 * profiles through these functions and the command and the statistical
 * tests read and build them through the same ones, so the wire layout has a
 * single definition.
 */
#include "allocprof/codec.h"
#include "allocprof/estimate.h"
#include "allocprof/profile.h"

#include <math.h>
#include <string.h>

static int add_row_types(ap_profile *p);

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
	_Static_assert(sizeof types / sizeof types[0] + 6 == AP_HEAP_NVALUES,
		       "ap_heap_sums_encode writes one value per sample type");
	if (!p || period <= 0 || p->nsample_types || p->nsamples)
		return AP_EINVAL;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		int rc = ap_profile_add_sample_type(p, types[i][0], types[i][1]);
		if (rc < 0)
			return rc;
	}
	int rc = add_row_types(p);
	if (rc < 0)
		return rc;
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

/* The six row types (docs/STATISTICS.md section 5): exact samples and the
 * squared-variance sums, for the alloc then the inuse view. */
static int add_row_types(ap_profile *p)
{
	static const char *const types[][2] = {
		{ AP_ST_ALLOC_EXACT, "count" },
		{ AP_ST_ALLOC_SPACE_VAR2, AP_UNIT_VAR2 },
		{ AP_ST_ALLOC_OBJECTS_VAR2, AP_UNIT_VAR2 },
		{ AP_ST_INUSE_EXACT, "count" },
		{ AP_ST_INUSE_SPACE_VAR2, AP_UNIT_VAR2 },
		{ AP_ST_INUSE_OBJECTS_VAR2, AP_UNIT_VAR2 },
	};
	if (!p || !p->nsample_types || p->nsamples ||
	    ap_profile_find_sample_type(p, AP_ST_ALLOC_EXACT) >= 0)
		return AP_EINVAL;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		int rc = ap_profile_add_sample_type(p, types[i][0], types[i][1]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Sums are doubles; the wire wants integers. Rounding is unbiased
 * (ap_round_unbiased, docs/STATISTICS.md): llround turns a weight in (1, 2)
 * into 1 and a small variance into 0, which over many lines biases sums and
 * makes rows look exact. The coin of a (line, column) comes from the line's
 * key (stable across the dumps of one process, so a cumulative column never
 * shrinks between dumps) and the column. Negatives are float residue of
 * add-then-subtract, and NaN is nothing: both are written 0.
 */
static int64_t rnd(double x, uint64_t key, uint32_t column)
{
	if (!(x > 0))
		return 0;
	return ap_round_unbiased(x, key ^ ap_round_key(NULL, 0, column));
}

void ap_heap_sums_encode(const ap_heap_sums *alloc, const ap_heap_sums *inuse,
			 double rate, uint64_t line_key,
			 int64_t values[AP_HEAP_NVALUES])
{
	const ap_heap_sums *a = alloc, *u = inuse;
	bool live = u->samples > 0;
	uint64_t k = line_key;
	int64_t *v = values;
	v[0] = rnd(a->objects, k, 0);
	v[1] = rnd(a->space, k, 1);
	v[2] = live ? rnd(u->objects, k, 2) : 0;
	v[3] = live ? rnd(u->space, k, 3) : 0;
	v[4] = (int64_t)a->samples;
	v[5] = rnd(a->u, k, 5);
	v[6] = rnd(a->space_var, k, 6);
	v[7] = rnd(a->objects_var, k, 7);
	v[8] = (int64_t)u->samples;
	v[9] = live ? rnd(u->u, k, 9) : 0;
	v[10] = live ? rnd(u->space_var, k, 10) : 0;
	v[11] = live ? rnd(u->objects_var, k, 11) : 0;
	v[12] = rnd(a->usable, k, 12);
	v[13] = live ? rnd(u->usable, k, 13) : 0;
	v[14] = (int64_t)a->exact;
	v[15] = rnd(ap_var2_encode(a->space_var2, rate), k, 15);
	v[16] = rnd(ap_var2_encode(a->objects_var2, rate), k, 16);
	v[17] = live ? (int64_t)u->exact : 0;
	v[18] = live ? rnd(ap_var2_encode(u->space_var2, rate), k, 18) : 0;
	v[19] = live ? rnd(ap_var2_encode(u->objects_var2, rate), k, 19) : 0;
}

/* ---- histograms: extensions, and comments of earlier versions ------- */

/* *name = a copy of (s, n); on failure *snap is released too. */
static int take_name(const char *s, size_t n, const ap_allocator *al, char **name,
		     ap_hist_snap **snap)
{
	char *c = al->alloc(al->ctx, n + 1);
	if (!c) {
		ap_hist_snap_destroy(*snap);
		*snap = NULL;
		return AP_ENOMEM;
	}
	memcpy(c, s, n);
	c[n] = '\0';
	*name = c;
	return 0;
}

int ap_profile_hist_add(ap_profile *p, const char *name, const ap_hist_snap *snap)
{
	if (!p || !name || !name[0] || !snap)
		return AP_EINVAL;
	size_t plen = strlen(AP_PROFILE_HIST_EXT_PREFIX), nlen = strlen(name);
	char ext[AP_PROFILE_EXT_NAME_MAX + 1];
	if (nlen > AP_PROFILE_EXT_NAME_MAX - plen)
		return AP_EINVAL;
	memcpy(ext, AP_PROFILE_HIST_EXT_PREFIX, plen);
	memcpy(ext + plen, name, nlen + 1);
	const ap_allocator *al = ap_profile_allocator(p);
	unsigned char *bin = NULL;
	size_t blen = 0;
	int rc = ap_hist_encode(snap, al, &bin, &blen);
	if (rc == 0)
		rc = ap_profile_ext_add(p, ext, bin, blen);
	if (bin)
		ap_hist_buffer_free(al, bin, blen);
	return rc;
}

int ap_profile_hist_next(const ap_profile *p, size_t *cursor, const ap_allocator *alloc,
			 char **name, ap_hist_snap **snap)
{
	if (!p || !cursor || !name || !snap)
		return AP_EINVAL;
	*name = NULL;
	*snap = NULL;
	const ap_allocator *al = alloc ? alloc : ap_allocator_libc();
	size_t plen = strlen(AP_PROFILE_HIST_EXT_PREFIX);
	if (*cursor < p->nexts) {
		const ap_profile_ext *e =
			ap_profile_ext_next(p, AP_PROFILE_HIST_EXT_PREFIX, true, cursor);
		if (e) {
			if (!e->name[plen])
				return AP_ECORRUPT;
			int rc = ap_hist_decode(e->data, e->len, al, snap);
			if (rc) {
				*snap = NULL;
				return rc == AP_ENOMEM ? rc : AP_ECORRUPT;
			}
			return take_name(e->name + plen, strlen(e->name + plen), al, name,
					 snap);
		}
	}
	while (*cursor < p->nexts + p->ncomments) {
		const char *c = ap_profile_string(p, p->comments[*cursor - p->nexts]);
		++*cursor;
		int rc = ap_profile_hist_comment_decode(c, alloc, name, snap);
		if (rc != AP_ENOTFOUND)
			return rc;
	}
	return AP_ENOTFOUND;
}

/* The comment form, kept for profiles of earlier versions. */

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
	return take_name(comment + plen, (size_t)(eq - comment) - plen, al, name, snap);
}
