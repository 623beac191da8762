/*
 * diffstat.c: difference intervals for allocprof diff and the differential
 * flame graph (see diffstat.h).
 *
 * The difference of two independent HT estimates has variance var_a +
 * var_b (STATISTICS.md section 2: HT variances of independent parts add), so
 * with many samples on both sides the normal interval applies directly.
 * With few samples the HT normal interval is poor (section 4), and the exact
 * negative-binomial intervals do not combine by a formula; instead we take
 * each side's exact interval at level sqrt(L): both cover their truth at
 * once with probability at least sqrt(L)^2 = L (the profiles are
 * independent), and whenever both do, the difference of the truths lies in
 * [lo_new - hi_base, hi_new - lo_base]. That is conservative (wider than
 * needed), which is the right error for a "did this get worse?" question.
 */
#include "diffstat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/common.h"
#include "allocprof/estimate.h"

double vu_side_level(double level)
{
	if (!(level > 0 && level < 1))
		return (double)NAN;
	return sqrt(level);
}

const char *vu_method_name(vu_method m)
{
	return m == VU_NORMAL ? "normal" : m == VU_COMBINED ? "combined" : "exact";
}

double vu_empty_upper(double rate, double level)
{
	if (!(level > 0 && level < 1) || !(rate >= 1) || !isfinite(rate))
		return (double)NAN;
	if (rate <= 1)
		return 0;
	ap_interval iv;
	if (ap_nb_interval(0, 0, rate, level, true, true, &iv))
		return (double)NAN;
	return iv.hi;
}

static bool side_ok(const vu_side *s)
{
	return isfinite(s->bytes) && isfinite(s->var_bytes) &&
	       s->var_bytes >= 0 && (s->exact || (!isnan(s->lo) && !isnan(s->hi)));
}

int vu_diff_interval(const vu_side *base, const vu_side *nw, double level,
		     vu_diff *out)
{
	out->change = out->lo = out->hi = (double)NAN;
	out->significant = false;
	out->method = VU_EXACT;
	if (!(level > 0 && level < 1) || !side_ok(base) || !side_ok(nw))
		return AP_EINVAL;
	double d = nw->bytes - base->bytes;
	out->change = d;
	if (base->exact && nw->exact) {
		out->lo = out->hi = d;
		out->significant = d != 0;
		return 0;
	}
	bool many = (base->exact || base->samples >= AP_NB_MAX_SAMPLES) &&
		    (nw->exact || nw->samples >= AP_NB_MAX_SAMPLES);
	if (many) {
		double z = ap_normal_quantile(0.5 + level / 2);
		double half = z * sqrt(base->var_bytes + nw->var_bytes);
		out->lo = d - half;
		out->hi = d + half;
		out->method = VU_NORMAL;
	} else {
		/* An exact side's interval is its value. */
		double blo = base->exact ? base->bytes : base->lo;
		double bhi = base->exact ? base->bytes : base->hi;
		double nlo = nw->exact ? nw->bytes : nw->lo;
		double nhi = nw->exact ? nw->bytes : nw->hi;
		out->lo = nlo - bhi;
		out->hi = nhi - blo;
		/* Keep the point estimate inside (rounding in either side). */
		out->lo = fmin(out->lo, d);
		out->hi = fmax(out->hi, d);
		out->method = VU_COMBINED;
	}
	out->significant = out->lo > 0 || out->hi < 0;
	return 0;
}

void vu_diff_side(const hv_view *v, const hv_stat *st, double level,
		  vu_side *out)
{
	double side_level = vu_side_level(level);
	memset(out, 0, sizeof *out);
	if (!st || st->samples == 0) {
		out->bytes = st ? st->bytes : 0;
		out->exact = hv_rate(v) <= 1 && !hv_mixed_rates(v);
		out->lo = 0;
		out->hi = out->exact ? out->bytes
				     : out->bytes + vu_empty_upper(hv_rate(v),
								   side_level);
		return;
	}
	hv_stat s = *st;
	hv_stat_finish(&s, side_level);
	out->bytes = s.bytes;
	out->var_bytes = s.var_bytes;
	out->samples = s.samples;
	out->exact = s.method == HV_EXACT;
	out->lo = s.bytes_lo;
	out->hi = s.bytes_hi;
}

int vu_diff_stats(const hv_view *vb, const hv_stat *b, const hv_view *vn,
	    const hv_stat *n, double level, vu_diff *out)
{
	vu_side sb, sn;
	vu_diff_side(vb, b, level, &sb);
	vu_diff_side(vn, n, level, &sn);
	return vu_diff_interval(&sb, &sn, level, out);
}

/* ---- joining two views site by site --------------------------------- */

static int cmp_site_name(const void *a, const void *b)
{
	return strcmp((*(const hv_site *const *)a)->name,
		      (*(const hv_site *const *)b)->name);
}

static int cmp_change(const void *a, const void *b)
{
	const vu_row *x = a, *y = b;
	/* NaN (a corrupt statistic) sorts as no change: qsort needs a
	 * consistent order. */
	double ax = isnan(x->d.change) ? 0 : fabs(x->d.change);
	double ay = isnan(y->d.change) ? 0 : fabs(y->d.change);
	if (ax != ay)
		return ax > ay ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int row_diff(vu_join *r, const hv_stat *b, const hv_stat *n,
		    vu_diff *d)
{
	return vu_diff_stats(r->vb, b, r->vn, n, r->level, d);
}

/* Sorted-merge join of the two site lists by name. */
int vu_join_views(const hv_view *vb, const hv_view *vn, double level,
		  vu_join *r)
{
	memset(r, 0, sizeof *r);
	r->vb = vb;
	r->vn = vn;
	r->level = level;
	size_t nb = hv_nsites(r->vb), nn = hv_nsites(r->vn);
	const hv_site **sb = malloc((nb + 1) * sizeof *sb);
	const hv_site **sn = malloc((nn + 1) * sizeof *sn);
	r->rows = calloc(nb + nn + 1, sizeof *r->rows);
	if (!sb || !sn || !r->rows) {
		free(sb);
		free(sn);
		return -1;
	}
	for (size_t i = 0; i < nb; i++)
		sb[i] = hv_site_at(r->vb, i);
	for (size_t i = 0; i < nn; i++)
		sn[i] = hv_site_at(r->vn, i);
	qsort(sb, nb, sizeof *sb, cmp_site_name);
	qsort(sn, nn, sizeof *sn, cmp_site_name);
	size_t i = 0, j = 0;
	while (i < nb || j < nn) {
		vu_row *row = &r->rows[r->nrows++];
		int c = i == nb ? 1 : j == nn ? -1
					       : strcmp(sb[i]->name, sn[j]->name);
		const hv_site *either = c <= 0 ? sb[i] : sn[j];
		row->base = c <= 0 ? sb[i++] : NULL;
		row->nw = c >= 0 ? sn[j++] : NULL;
		row->name = either->name;
		if (row_diff(r, row->base ? &row->base->stat : NULL,
			     row->nw ? &row->nw->stat : NULL, &row->d)) {
			/* A statistic that cannot be turned into an interval
			 * (NaN sums) is shown without one, never dropped. */
			row->d.lo = row->d.hi = (double)NAN;
		}
	}
	free(sb);
	free(sn);
	qsort(r->rows, r->nrows, sizeof *r->rows, cmp_change);
	r->total_base = *hv_total(r->vb);
	r->total_new = *hv_total(r->vn);
	r->total.name = "total";
	if (row_diff(r, &r->total_base, &r->total_new, &r->total.d))
		r->total.d.lo = r->total.d.hi = (double)NAN;
	return 0;
}


void vu_join_free(vu_join *j)
{
	free(j->rows);
	j->rows = NULL;
	j->nrows = 0;
}
