/*
 * sample_table.c: the sample-table parser (allocprof/sample_table.h;
 * format in docs/FORMATS.md "Sample tables"). Line-oriented, integers
 * only, no allocation and no locale, so the runtime can use it while it
 * starts. Every rule a table breaks is reported with its line number.
 */
#include "allocprof/sample_table.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "allocprof/options.h"
#include "allocprof/sampler.h"

struct cursor {
	const char *p, *end;
	unsigned line;
	char *err;
	size_t errlen;
};

static int fail(struct cursor *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct cursor *c, int rc, const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "sample table line %u: %s", c->line, msg);
	return rc;
}

/* Split the current line (comments cut) into up to 3 words. Returns the
 * word count, 4 for too many; advances past the line. */
static int words(struct cursor *c, const char **w, size_t *wl)
{
	const char *e = c->p;
	while (e < c->end && *e != '\n')
		e++;
	const char *stop = memchr(c->p, '#', (size_t)(e - c->p));
	const char *q = c->p, *lim = stop ? stop : e;
	int n = 0;
	c->p = e < c->end ? e + 1 : e;
	c->line++;
	while (q < lim) {
		while (q < lim && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == lim)
			break;
		const char *s = q;
		while (q < lim && *q != ' ' && *q != '\t' && *q != '\r')
			q++;
		if (n == 3)
			return 4;
		w[n] = s;
		wl[n++] = (size_t)(q - s);
	}
	return n;
}

static bool is(const char *w, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(w, lit, n) == 0;
}

static int number(struct cursor *c, const char *w, size_t n, const char *what,
		  uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (ap_options_parse_u64(w, n, out) != 0)
		return fail(c, AP_EINVAL, "%s '%.*s' is not a decimal integer",
			    what, (int)(n > 32 ? 32 : n), w);
	if (*out < lo || *out > hi)
		return fail(c, AP_ERANGE, "%s %llu outside [%llu, %llu]", what,
			    (unsigned long long)*out, (unsigned long long)lo,
			    (unsigned long long)hi);
	return 0;
}

/* One "class MIN RATE" line after the header and the base. */
static int add_class(struct cursor *c, ap_sample_table *t, const char **w,
		     size_t *wl)
{
	uint64_t z, r;
	int rc;
	if ((rc = number(c, w[1], wl[1], "class size", 1, UINT64_MAX, &z)) ||
	    (rc = number(c, w[2], wl[2], "class rate", t->base,
			 AP_SAMPLER_RATE_MAX, &r)))
		return rc;
	if (t->n && z <= t->min_size[t->n - 1])
		return fail(c, AP_EINVAL, "class sizes must increase (%llu after %llu)",
			    (unsigned long long)z,
			    (unsigned long long)t->min_size[t->n - 1]);
	if (t->n == AP_SAMPLE_TABLE_MAX)
		return fail(c, AP_ERANGE, "more than %d classes", AP_SAMPLE_TABLE_MAX);
	t->min_size[t->n] = z;
	t->rate[t->n++] = r;
	return 0;
}

static int parse(struct cursor *c, ap_sample_table *t)
{
	const char *w[3];
	size_t wl[3];
	int state = 0; /* 0: before the header, 1: before base, 2: classes */
	while (c->p < c->end) {
		int n = words(c, w, wl), rc;
		uint64_t v;
		if (n == 0)
			continue;
		if (state == 0) {
			if (n != 2 || !is(w[0], wl[0], AP_SAMPLE_TABLE_MAGIC))
				return fail(c, AP_EINVAL, "not a sample table (first line "
					    "must be '" AP_SAMPLE_TABLE_MAGIC " %d')",
					    AP_SAMPLE_TABLE_VERSION);
			if (ap_options_parse_u64(w[1], wl[1], &v) != 0 ||
			    v != AP_SAMPLE_TABLE_VERSION)
				return fail(c, AP_EINVAL, "unsupported version '%.*s' "
					    "(this allocprof reads version %d)",
					    (int)(wl[1] > 20 ? 20 : wl[1]), w[1],
					    AP_SAMPLE_TABLE_VERSION);
			state = 1;
		} else if (state == 1) {
			if (n != 2 || !is(w[0], wl[0], "base"))
				return fail(c, AP_EINVAL, "expected 'base RATE'");
			if ((rc = number(c, w[1], wl[1], "base rate", 1,
					 AP_SAMPLER_RATE_MAX, &t->base)))
				return rc;
			state = 2;
		} else {
			if (n != 3 || !is(w[0], wl[0], "class"))
				return fail(c, AP_EINVAL, "expected 'class MIN_SIZE RATE'");
			if ((rc = add_class(c, t, w, wl)))
				return rc;
		}
	}
	if (state < 2)
		return fail(c, AP_EINVAL, "%s", state == 0 ? "empty (no header)"
							   : "no 'base RATE' line");
	return 0;
}

int ap_sample_table_parse(const char *text, size_t len, ap_sample_table *t,
			  char *err, size_t errlen)
{
	struct cursor c = {text, text + len, 0, err, errlen};
	if (!t)
		return AP_EINVAL;
	memset(t, 0, sizeof *t);
	if (!text && len)
		return fail(&c, AP_EINVAL, "no text");
	int rc = parse(&c, t);
	if (rc)
		memset(t, 0, sizeof *t);
	return rc;
}

uint64_t ap_sample_table_rate(const ap_sample_table *t, uint64_t size)
{
	size_t lo = 0, hi = t->n; /* first class with min_size > size */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->min_size[mid] <= size)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? t->base : t->rate[lo - 1];
}
