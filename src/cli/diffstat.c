/*
 * diffstat.c: the statistics of allocprof diff and the differential flame
 * graph (see diffstat.h). The tests themselves are the library's
 * (allocprof/difftest.h, docs/STATISTICS.md section 8); this file turns
 * view statistics into rows, joins views site by site, and adjusts the
 * sites' p-values for multiplicity (Benjamini-Hochberg): with hundreds of
 * sites, per-site 5% tests flag about 5% of the unchanged ones.
 */
#include "diffstat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/common.h"
#include "allocprof/estimate.h"

void vu_row_of(const hv_view *v, const hv_stat *st, ap_row *out)
{
	memset(out, 0, sizeof *out);
	if (!st || st->samples == 0) {
		/* Not seen: bounded by what can hide unseen at the coarsest
		 * rate of the view's inputs (STATISTICS.md section 5). */
		out->rate = hv_mixed_rates(v) ? 0 : hv_rate(v);
		out->rate_max = hv_coarsest_rate(v);
		out->z_min = hv_view_options(v)->size_min;
		return;
	}
	double k;
	hv_stat_row(st, out, &k);
	/* The row in the view's bytes: a usable-size view scales requested
	 * bytes by its usable/requested ratio (k = 1 for requested). */
	out->bytes *= k;
	out->u *= k;
	out->var_bytes *= k * k;
	out->var2_bytes *= k * k * k * k;
	if (!(out->rate_max > 0))
		out->rate_max = hv_coarsest_rate(v);
}

int vu_diff_stats(const hv_view *vb, const hv_stat *b, const hv_view *vn,
		  const hv_stat *n, double level, vu_diff *out)
{
	ap_row rb, rn;
	vu_row_of(vb, b, &rb);
	vu_row_of(vn, n, &rn);
	return ap_diff_test(&rb, &rn, level, out);
}

void vu_side_mean(const hv_stat *sum, size_t m, double level, hv_stat *out)
{
	*out = *sum;
	hv_stat_finish(out, level);
	if (m <= 1)
		return;
	double k = 1.0 / (double)m;
	out->bytes *= k;
	out->req_bytes *= k;
	out->objects *= k;
	out->bytes_lo *= k;
	out->bytes_hi *= k;
	out->objects_lo *= k;
	out->objects_hi *= k;
}

/* ---- joining views site by site ------------------------------------- */

struct ent {
	const hv_site *s;
	size_t run; /* 0..nb-1 BASE, nb..nb+nn-1 NEW */
};

static int cmp_ent(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	int c = strcmp(x->s->name, y->s->name);
	if (c)
		return c;
	return x->run < y->run ? -1 : x->run > y->run;
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

static const hv_view *view_of(const vu_join *j, size_t run)
{
	return run < j->nb ? j->vb[run] : j->vn[run - j->nb];
}

/*
 * Test one site given its statistic in every run (st[run], NULL where the
 * site is absent); rows is scratch of nb + nn rows.
 */
static int test_site(vu_join *j, const hv_stat *const *st, ap_row *rows,
		     vu_diff *d)
{
	for (size_t r = 0; r < j->nb + j->nn; r++)
		vu_row_of(view_of(j, r), st[r], &rows[r]);
	if (j->nb == 1 && j->nn == 1)
		return ap_diff_test(&rows[0], &rows[1], j->level, d);
	return ap_diff_test_runs(rows, j->nb, rows + j->nb, j->nn, j->level, d);
}

static int fill_row(vu_join *j, vu_row *row, const hv_stat *const *st,
		    ap_row *scratch)
{
	for (size_t r = 0; r < j->nb + j->nn; r++) {
		if (!st[r])
			continue;
		hv_stat_add(r < j->nb ? &row->base : &row->nw, st[r]);
		if (r < j->nb)
			row->base_present++;
		else
			row->new_present++;
	}
	/* A side without samples shows the bound of its coarsest rate. */
	for (size_t r = 0; r < j->nb + j->nn; r++) {
		hv_stat *side = r < j->nb ? &row->base : &row->nw;
		const hv_view *v = view_of(j, r);
		if (side->samples == 0) {
			side->rate_max = fmax(side->rate_max, hv_coarsest_rate(v));
			side->z_min = hv_view_options(v)->size_min;
		}
	}
	if (test_site(j, st, scratch, &row->d)) {
		/* A statistic that cannot be turned into an interval (NaN
		 * sums) is shown without one, never dropped. */
		row->d.lo = row->d.hi = (double)NAN;
		row->d.p = row->d.q = 1;
		row->d.significant = false;
	}
	return 0;
}

static int join_sites(vu_join *j, const hv_stat **st, ap_row *scratch)
{
	size_t nruns = j->nb + j->nn, total = 0;
	for (size_t r = 0; r < nruns; r++)
		total += hv_nsites(view_of(j, r));
	struct ent *e = malloc((total + 1) * sizeof *e);
	j->rows = calloc(total + 1, sizeof *j->rows);
	if (!e || !j->rows) {
		free(e);
		return -1;
	}
	size_t k = 0;
	for (size_t r = 0; r < nruns; r++)
		for (size_t i = 0; i < hv_nsites(view_of(j, r)); i++)
			e[k++] = (struct ent){hv_site_at(view_of(j, r), i), r};
	qsort(e, total, sizeof *e, cmp_ent);
	for (size_t a = 0; a < total;) {
		size_t b = a;
		memset(st, 0, nruns * sizeof *st);
		vu_row *row = &j->rows[j->nrows++];
		row->name = e[a].s->name;
		row->site = e[a].s;
		for (; b < total && !strcmp(e[b].s->name, row->name); b++) {
			st[e[b].run] = &e[b].s->stat;
			if (e[b].run >= j->nb && row->site == e[a].s &&
			    e[a].run < j->nb)
				row->site = e[b].s; /* prefer NEW's stack */
		}
		fill_row(j, row, st, scratch);
		a = b;
	}
	free(e);
	return 0;
}

int vu_join_views(const hv_view *const *vb, size_t nb,
		  const hv_view *const *vn, size_t nn, double level,
		  double fdr, vu_join *j)
{
	memset(j, 0, sizeof *j);
	j->vb = vb;
	j->vn = vn;
	j->nb = nb;
	j->nn = nn;
	j->level = level;
	j->fdr = fdr;
	size_t nruns = nb + nn;
	const hv_stat **st = malloc((nruns + 1) * sizeof *st);
	ap_row *scratch = malloc((nruns + 1) * sizeof *scratch);
	int rc = st && scratch ? join_sites(j, st, scratch) : -1;
	if (!rc) {
		/* q-values across the sites; the total stays out of the
		 * family (it is not one more site). */
		vu_diff *d = malloc((j->nrows + 1) * sizeof *d);
		if (!d) {
			rc = -1;
		} else {
			for (size_t i = 0; i < j->nrows; i++)
				d[i] = j->rows[i].d;
			rc = ap_diff_fdr(d, j->nrows, fdr, NULL) ? -1 : 0;
			for (size_t i = 0; !rc && i < j->nrows; i++)
				j->rows[i].d = d[i];
			free(d);
		}
	}
	if (!rc) {
		qsort(j->rows, j->nrows, sizeof *j->rows, cmp_change);
		for (size_t r = 0; r < nruns; r++)
			st[r] = hv_total(view_of(j, r));
		j->total.name = "total";
		fill_row(j, &j->total, st, scratch);
	}
	free(st);
	free(scratch);
	if (rc)
		vu_join_free(j);
	return rc;
}

void vu_join_free(vu_join *j)
{
	free(j->rows);
	j->rows = NULL;
	j->nrows = 0;
}

/* One delta row: the site's (finished) statistic is the change. */
static void delta_row(const hv_view *vd, vu_row *row, const hv_stat *st)
{
	memset(&row->base, 0, sizeof row->base);
	row->base.rate_max = hv_coarsest_rate(vd);
	row->nw = *st;
	row->new_present = st->samples > 0;
	hv_stat f = *st;
	hv_stat_finish(&f, hv_view_options(vd)->level);
	row->d = (vu_diff){.change = f.bytes, .lo = f.bytes_lo, .hi = f.bytes_hi,
			   .p = f.samples ? 0 : 1, .method = AP_DIFF_EXACT};
	row->d.q = row->d.p;
	row->d.significant = f.samples > 0;
}

int vu_join_delta(const hv_view *const *vd_slot, double level, double fdr,
		  vu_join *j)
{
	const hv_view *vd = *vd_slot;
	memset(j, 0, sizeof *j);
	j->vb = j->vn = vd_slot;
	j->nb = j->nn = 1;
	j->level = level;
	j->fdr = fdr;
	j->delta = true;
	size_t n = hv_nsites(vd);
	j->rows = calloc(n + 1, sizeof *j->rows);
	if (!j->rows)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const hv_site *s = hv_site_at(vd, i);
		j->rows[i].name = s->name;
		j->rows[i].site = s;
		delta_row(vd, &j->rows[i], &s->stat);
	}
	j->nrows = n;
	j->total.name = "total";
	delta_row(vd, &j->total, hv_total(vd));
	return 0;
}
