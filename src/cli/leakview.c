/*
 * leakview.c: leak verdicts over a series (leakview.h). The statistics
 * are the library's (ap_leak_fdr); this file turns a series into the
 * per-site arrays it takes, orders the verdicts for people and writes
 * them as a table or JSON.
 */
#define _GNU_SOURCE
#include "leakview.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "json.h"

/*
 * Site j's live bytes and their variances over the points into pts; the
 * count. Points where the site's value is unknown are left out: the
 * runtime's timeline ring lists only the largest sites of each point (the
 * rest summed as "other"), so a site missing from a ring point was below
 * that point's cut, not at 0 bytes; counting it as 0 would make a site
 * hovering at the cut look like a swing. The trend then fits the points
 * where the site was seen (its later half by its own span).
 */
static size_t site_points(const ts_series *s, size_t j, ap_leak_point *pts)
{
	size_t n = 0;
	for (size_t i = 0; i < ts_npoints(s); i++) {
		if (j != SIZE_MAX && !ts_cell_known(s, i, j))
			continue;
		ts_cell c = j == SIZE_MAX ? ts_point_at(s, i)->total
					  : ts_cell_at(s, i, j);
		pts[n++] = (ap_leak_point){ts_point_at(s, i)->t_s, c.v.bytes,
					   c.v.var_bytes};
	}
	return n;
}

/* Leaks first (fastest first), then by q, then by live bytes at the end. */
static int row_order(const void *a, const void *b)
{
	const lk_row *x = a, *y = b;
	if (x->r.leak != y->r.leak)
		return x->r.leak ? -1 : 1;
	if (x->r.leak && x->r.rate != y->r.rate)
		return x->r.rate > y->r.rate ? -1 : 1;
	if (!x->r.leak && x->r.q != y->r.q && !isnan(x->r.q) && !isnan(y->r.q))
		return x->r.q < y->r.q ? -1 : 1;
	if (x->last_bytes != y->last_bytes)
		return x->last_bytes > y->last_bytes ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

int lk_analyse(const ts_series *s, double fdr, lk_result *out, char *err,
	       size_t errlen)
{
	size_t np = ts_npoints(s), ns = ts_nsites(s);
	memset(out, 0, sizeof *out);
	out->fdr = fdr;
	out->level = ts_series_options(s)->hv.level;
	if (np < 2) {
		ap_cli_seterr(err, errlen, "a trend needs at least two points");
		return AP_EINVAL;
	}
	ap_leak_point *pts = calloc(np * (ns + 1), sizeof *pts);
	ap_leak_series *ser = calloc(ns + 1, sizeof *ser);
	ap_leak_result *res = calloc(ns + 1, sizeof *res);
	out->rows = calloc(ns + 1, sizeof *out->rows);
	out->is_leak = calloc(ns + 1, sizeof *out->is_leak);
	int rc = pts && ser && res && out->rows && out->is_leak ? 0 : AP_ENOMEM;
	for (size_t j = 0; !rc && j < ns; j++) {
		size_t n = site_points(s, j, pts + j * np);
		ser[j] = (ap_leak_series){pts + j * np, n};
	}
	if (!rc)
		rc = ap_leak_fdr(ser, ns, out->level, fdr, NULL, res);
	if (!rc) {
		site_points(s, SIZE_MAX, pts + ns * np);
		rc = ap_leak_trend(pts + ns * np, np, out->level, &out->total);
	}
	for (size_t j = 0; !rc && j < ns; j++) {
		/* the last known value (the ring may not list it at the end) */
		out->rows[j] = (lk_row){j, res[j],
					ser[j].n ? ser[j].pts[ser[j].n - 1].bytes : 0};
		out->is_leak[j] = res[j].leak;
		out->nleaks += res[j].leak;
	}
	if (!rc) {
		/* the later half ap_leak_trend fits: from the last point at or
		 * before the midpoint */
		double t0 = ts_point_at(s, 0)->t_s, t1 = ts_point_at(s, np - 1)->t_s;
		out->t_from = t0;
		for (size_t i = 0; i < np && ts_point_at(s, i)->t_s <= (t0 + t1) / 2; i++)
			out->t_from = ts_point_at(s, i)->t_s;
		out->n = ns;
		qsort(out->rows, ns, sizeof *out->rows, row_order);
	}
	free(pts);
	free(ser);
	free(res);
	if (rc) {
		ap_cli_seterr(err, errlen, "%s", rc == AP_ENOMEM ? "out of memory"
			      : "the series has invalid values (times or estimates)");
		lk_free(out);
	}
	return rc;
}

void lk_free(lk_result *r)
{
	free(r->rows);
	free(r->is_leak);
	r->rows = NULL;
	r->is_leak = NULL;
	r->n = 0;
}

/* One number of a rate in the unit already chosen. */
static void num(char *buf, size_t n, double v, int decimals, bool sign)
{
	if (isinf(v))
		snprintf(buf, n, "%sinf", v > 0 ? "+" : "-");
	else
		snprintf(buf, n, sign ? "%+.*f" : "%.*f", decimals, v);
}

void lk_format_rate(double rate, double lo, double hi, char *buf, size_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
					    "PiB"};
	if (isnan(rate)) {
		snprintf(buf, n, "n/a");
		return;
	}
	double r = rate * 3600, l = lo * 3600, h = hi * 3600;
	/* one unit for the three numbers, chosen by the largest finite one */
	double big = fabs(r);
	if (isfinite(l) && fabs(l) > big)
		big = fabs(l);
	if (isfinite(h) && fabs(h) > big)
		big = fabs(h);
	size_t u = 0;
	double scale = 1;
	while (big / scale >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		scale *= 1024;
		u++;
	}
	double m = big / scale;
	int dec = u == 0 || m >= 100 ? 0 : m >= 10 ? 1 : 2;
	char a[32], b[32], c[32];
	num(a, sizeof a, r / scale, dec, true);
	num(b, sizeof b, l / scale, dec, false);
	num(c, sizeof c, h / scale, dec, false);
	if (isnan(lo) || isnan(hi))
		snprintf(buf, n, "%s %s/h", a, units[u]);
	else
		snprintf(buf, n, "%s %s/h [%s, %s]", a, units[u], b, c);
}

static const char *verdict(const ap_leak_result *r)
{
	return r->points == 0 ? "n/a" : r->leak ? "LEAK" : "-";
}

static void fmt_q(const ap_leak_result *r, char *buf, size_t n)
{
	if (r->points == 0 || isnan(r->q))
		snprintf(buf, n, "n/a");
	else if (r->q < 1e-4)
		snprintf(buf, n, "<0.0001");
	else
		snprintf(buf, n, "%.4f", r->q);
}

int lk_write_text(const ts_series *s, const lk_result *r, uint64_t top,
		  FILE *out)
{
	char head[160], rate[96], q[16], live[32];
	ts_describe(s, head, sizeof head);
	fprintf(out, "Leaks, %s\n", head);
	fprintf(out, "Trend of each site's live bytes from %.1f s on (the later "
		"half), %g%% intervals; %zu of %zu sites flagged at FDR %g.\n\n",
		r->t_from, 100 * r->level, r->nleaks, r->n, r->fdr);
	fprintf(out, "%-7s %-34s %8s %10s  %s\n", "verdict", "growth of live bytes",
		"q", "live (end)", "site");
	size_t shown = top && top < r->n ? (size_t)top : r->n;
	for (size_t i = 0; i < shown; i++) {
		const lk_row *w = &r->rows[i];
		lk_format_rate(w->r.rate, w->r.rate_lo, w->r.rate_hi, rate,
			       sizeof rate);
		fmt_q(&w->r, q, sizeof q);
		ap_cli_format_bytes(w->last_bytes, AP_BYTES_SHORT, live, sizeof live);
		fprintf(out, "%-7s %-34s %8s %10s  %s\n", verdict(&w->r), rate, q,
			live, ts_site_at(s, w->site)->name);
	}
	if (shown < r->n)
		fprintf(out, "(%zu more sites; --top 0 shows all)\n", r->n - shown);
	lk_format_rate(r->total.rate, r->total.rate_lo, r->total.rate_hi, rate,
		       sizeof rate);
	fprintf(out, "\nProcess total: %s (not tested: the sum of the sites)\n",
		rate);
	if (r->nleaks == 0)
		fprintf(out, "No site's live bytes keep growing at FDR %g.\n", r->fdr);
	return ferror(out) ? -1 : 0;
}

static void json_rate(json_writer *w, const ap_leak_result *r)
{
	json_key(w, "rate");
	json_number(w, r->rate);
	json_key(w, "rate_lo");
	json_number(w, r->rate_lo);
	json_key(w, "rate_hi");
	json_number(w, r->rate_hi);
	json_key(w, "p");
	json_number(w, r->p);
}

int lk_write_json(const ts_series *s, const lk_result *r, uint64_t top,
		  FILE *out)
{
	json_writer w;
	ts_json_begin(&w, out, s);
	json_key(&w, "t_first");
	json_number(&w, ts_point_at(s, 0)->t_s);
	json_key(&w, "t_last");
	json_number(&w, ts_point_at(s, ts_npoints(s) - 1)->t_s);
	json_key(&w, "t_from");
	json_number(&w, r->t_from);
	json_key(&w, "fdr");
	json_number(&w, r->fdr);
	json_key(&w, "unit");
	json_string(&w, "bytes/s");
	json_key(&w, "leaks");
	json_uint(&w, r->nleaks);
	json_key(&w, "sites_tested");
	json_uint(&w, r->n);
	json_key(&w, "total");
	json_begin_object(&w);
	json_rate(&w, &r->total);
	json_end_object(&w);
	json_key(&w, "sites");
	json_begin_array(&w);
	size_t shown = top && top < r->n ? (size_t)top : r->n;
	for (size_t i = 0; i < shown; i++) {
		const lk_row *row = &r->rows[i];
		const ts_site *site = ts_site_at(s, row->site);
		json_begin_object(&w);
		json_key(&w, "function");
		json_string(&w, site->function);
		json_key(&w, "site");
		json_string(&w, site->name);
		json_key(&w, "leak");
		json_bool(&w, row->r.leak);
		json_rate(&w, &row->r);
		json_key(&w, "q");
		json_number(&w, row->r.q);
		json_key(&w, "points");
		json_uint(&w, row->r.points);
		json_key(&w, "bytes_last");
		json_number(&w, round(row->last_bytes));
		json_key(&w, "bytes_max");
		json_number(&w, round(site->max_bytes));
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	fputc('\n', out);
	return json_ok(&w) && !ferror(out) ? 0 : -1;
}
