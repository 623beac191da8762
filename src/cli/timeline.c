/*
 * timeline.c: which sites a timeline draws, and its JSON and text forms
 * (timeline.h); the SVG is timeline_svg.c's. Flagged leaks are always
 * among the sites drawn (they are what a reader looks for), then the
 * sites with the most live bytes at any point; the rest is summed per
 * point as "other", whose interval is the normal one of the summed HT
 * variances (the sites' samples are independent).
 */
#define _GNU_SOURCE
#include "timeline.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/estimate.h"
#include "cli_util.h"
#include "json.h"

const lk_row *tl_leak_row(const lk_result *lk, size_t j)
{
	for (size_t i = 0; lk && i < lk->n; i++)
		if (lk->rows[i].site == j)
			return &lk->rows[i];
	return NULL;
}

static const ts_series *rank_series; /* qsort has no context argument */
static const lk_result *rank_leaks;

/* Leaks first (as leakview orders them), then by largest live bytes. */
static int rank(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	bool lx = rank_leaks && rank_leaks->is_leak[x];
	bool ly = rank_leaks && rank_leaks->is_leak[y];
	if (lx != ly)
		return lx ? -1 : 1;
	double mx = ts_site_at(rank_series, x)->max_bytes;
	double my = ts_site_at(rank_series, y)->max_bytes;
	if (mx != my)
		return mx > my ? -1 : 1;
	return (x > y) - (x < y);
}

static void value_add(ts_value *to, const ts_value *v)
{
	to->bytes += v->bytes;
	to->var_bytes += v->var_bytes;
	to->objects += v->objects;
	to->var_objects += v->var_objects;
}

/*
 * Per point, the sites not drawn summed into sel->other. A partial point
 * (the runtime's timeline ring) lists only its largest sites; the rest
 * are in its total alone (the ring's "other"), so they are added here as
 * the total less every listed site, drawn or not, and the areas stack up
 * to the total. Their variance is the total's less the listed sites'
 * (sites are independent, so the variances add); both differences are
 * clamped at 0 against rounding.
 */
static void sum_rest(const ts_series *s, const bool *drawn, tl_sel *sel)
{
	double level = ts_series_options(s)->hv.level;
	for (size_t i = 0; i < ts_npoints(s); i++) {
		ts_cell *o = &sel->other[i];
		ts_value listed;
		memset(o, 0, sizeof *o);
		memset(&listed, 0, sizeof listed);
		for (size_t j = 0; j < ts_nsites(s); j++) {
			ts_cell c = ts_cell_at(s, i, j);
			value_add(&listed, &c.v);
			if (!drawn[j])
				value_add(&o->v, &c.v);
		}
		const ts_point *pt = ts_point_at(s, i);
		double rest = pt->total.v.bytes - listed.bytes;
		if (pt->partial && rest >= 0.5) { /* under a byte: rounding */
			ts_value r = {rest,
				      fmax(pt->total.v.var_bytes - listed.var_bytes, 0),
				      fmax(pt->total.v.objects - listed.objects, 0),
				      fmax(pt->total.v.var_objects - listed.var_objects, 0)};
			value_add(&o->v, &r);
			sel->unlisted = true;
		}
		ap_interval iv;
		if (ap_ht_interval(o->v.bytes, o->v.var_bytes, level, &iv) == 0) {
			o->lo = iv.lo;
			o->hi = iv.hi;
		} else {
			o->lo = o->hi = o->v.bytes;
		}
	}
}

int tl_select(const ts_series *s, const lk_result *lk, uint64_t top,
	      tl_sel *out)
{
	size_t ns = ts_nsites(s), np = ts_npoints(s);
	memset(out, 0, sizeof *out);
	size_t *order = malloc((ns + 1) * sizeof *order);
	bool *drawn = calloc(ns + 1, sizeof *drawn);
	out->other = calloc(np + 1, sizeof *out->other);
	if (!order || !drawn || !out->other) {
		free(order);
		free(drawn);
		tl_sel_free(out);
		return AP_ENOMEM;
	}
	for (size_t j = 0; j < ns; j++)
		order[j] = j;
	rank_series = s;
	rank_leaks = lk;
	qsort(order, ns, sizeof *order, rank);
	rank_series = NULL;
	rank_leaks = NULL;
	out->n = top && top < ns ? (size_t)top : ns;
	out->nrest = ns - out->n;
	out->site = order;
	for (size_t k = 0; k < out->n; k++)
		drawn[order[k]] = true;
	sum_rest(s, drawn, out);
	free(drawn);
	return 0;
}

const char *tl_other_what(const tl_sel *sel, bool terse, char *buf, size_t n)
{
	const char *s = sel->nrest == 1 ? "" : "s";
	if (sel->nrest && sel->unlisted)
		snprintf(buf, n, terse ? "%zu site%s + unlisted"
				       : "%zu more site%s and those the ring did not list",
			 sel->nrest, s);
	else if (sel->unlisted)
		snprintf(buf, n, "%s", terse ? "sites the ring did not list"
					      : "the sites the ring did not list");
	else
		snprintf(buf, n, terse ? "%zu site%s" : "%zu more site%s", sel->nrest, s);
	return buf;
}

void tl_sel_free(tl_sel *sel)
{
	free(sel->site);
	free(sel->other);
	memset(sel, 0, sizeof *sel);
}

/* ---- JSON ------------------------------------------------------------ */

static void json_cell(json_writer *w, const ts_cell *c)
{
	json_begin_object(w);
	json_key(w, "bytes");
	json_number(w, round(c->v.bytes));
	json_key(w, "bytes_lo");
	json_number(w, floor(c->lo));
	json_key(w, "bytes_hi");
	json_number(w, ceil(c->hi));
	json_key(w, "objects");
	json_number(w, round(c->v.objects));
	json_end_object(w);
}

static void json_site(json_writer *w, const ts_series *s, const lk_result *lk,
		      size_t j)
{
	const ts_site *site = ts_site_at(s, j);
	const lk_row *row = tl_leak_row(lk, j);
	json_begin_object(w);
	json_key(w, "function");
	json_string(w, site->function);
	json_key(w, "site");
	json_string(w, site->name);
	json_key(w, "leak");
	json_bool(w, row && row->r.leak);
	json_key(w, "rate");
	json_number(w, row ? row->r.rate : (double)NAN);
	json_key(w, "q");
	json_number(w, row ? row->r.q : (double)NAN);
	json_key(w, "values");
	json_begin_array(w);
	for (size_t i = 0; i < ts_npoints(s); i++) {
		ts_cell c = ts_cell_at(s, i, j);
		json_cell(w, &c);
	}
	json_end_array(w);
	json_end_object(w);
}

int tl_write_json(const ts_series *s, const lk_result *lk, const tl_sel *sel,
		  FILE *out)
{
	json_writer w;
	ts_json_begin(&w, out, s);
	json_key(&w, "times");
	json_begin_array(&w);
	for (size_t i = 0; i < ts_npoints(s); i++)
		json_number(&w, ts_point_at(s, i)->t_s);
	json_end_array(&w);
	json_key(&w, "total");
	json_begin_array(&w);
	for (size_t i = 0; i < ts_npoints(s); i++)
		json_cell(&w, &ts_point_at(s, i)->total);
	json_end_array(&w);
	size_t pk = ts_peak(s);
	json_key(&w, "peak");
	json_begin_object(&w);
	json_key(&w, "index");
	json_uint(&w, pk);
	json_key(&w, "t");
	json_number(&w, ts_point_at(s, pk)->t_s);
	json_key(&w, "value");
	json_cell(&w, &ts_point_at(s, pk)->total);
	json_end_object(&w);
	json_key(&w, "sites");
	json_begin_array(&w);
	for (size_t k = 0; k < sel->n; k++)
		json_site(&w, s, lk, sel->site[k]);
	json_end_array(&w);
	json_key(&w, "other");
	json_begin_object(&w);
	json_key(&w, "sites");
	json_uint(&w, sel->nrest);
	json_key(&w, "unlisted");
	json_bool(&w, sel->unlisted);
	json_key(&w, "values");
	json_begin_array(&w);
	for (size_t i = 0; i < ts_npoints(s); i++)
		json_cell(&w, &sel->other[i]);
	json_end_array(&w);
	json_end_object(&w);
	json_end_object(&w);
	fputc('\n', out);
	return json_ok(&w) && !ferror(out) ? 0 : -1;
}

/* ---- text ------------------------------------------------------------ */

static const char *bytes(double v, char *buf)
{
	ap_cli_format_bytes(v, AP_BYTES_SHORT, buf, 32);
	return buf;
}

int tl_write_text(const ts_series *s, const lk_result *lk, const tl_sel *sel,
		  FILE *out)
{
	char head[160], b[3][32], rate[96], what[80];
	ts_describe(s, head, sizeof head);
	double level = ts_series_options(s)->hv.level;
	fprintf(out, "Live heap over time, %s\n\n", head);
	for (size_t k = 0; k < sel->n; k++) {
		const lk_row *row = tl_leak_row(lk, sel->site[k]);
		fprintf(out, "#%-2zu %s", k + 1, ts_site_at(s, sel->site[k])->name);
		if (row && row->r.leak) {
			lk_format_rate(row->r.rate, row->r.rate_lo, row->r.rate_hi,
				       rate, sizeof rate);
			fprintf(out, "  LEAK %s", rate);
		}
		fputc('\n', out);
	}
	bool other = tl_has_other(sel);
	if (other)
		fprintf(out, "other: %s\n", tl_other_what(sel, false, what, sizeof what));
	fprintf(out, "\n%9s %10s %-22s", "time", "total",
		level == 0.95 ? "[95% interval]" : "[interval]");
	for (size_t k = 0; k < sel->n; k++) {
		char col[24];
		snprintf(col, sizeof col, "#%zu", k + 1);
		fprintf(out, " %11s", col);
	}
	if (other)
		fprintf(out, " %11s", "other");
	fputc('\n', out);
	for (size_t i = 0; i < ts_npoints(s); i++) {
		const ts_point *p = ts_point_at(s, i);
		char iv[80];
		snprintf(iv, sizeof iv, "[%s, %s]", bytes(p->total.lo, b[1]),
			 bytes(p->total.hi, b[2]));
		fprintf(out, "%7.1f s %10s %-22s", p->t_s,
			bytes(p->total.v.bytes, b[0]), iv);
		for (size_t k = 0; k < sel->n; k++) {
			ts_cell c = ts_cell_at(s, i, sel->site[k]);
			fprintf(out, " %11s", bytes(c.v.bytes, b[0]));
		}
		if (other)
			fprintf(out, " %11s", bytes(sel->other[i].v.bytes, b[0]));
		fputc('\n', out);
	}
	const ts_point *pk = ts_point_at(s, ts_peak(s));
	fprintf(out, "\nPeak: %s [%s, %s] at %.1f s (point %zu of %zu)\n",
		bytes(pk->total.v.bytes, b[0]), bytes(pk->total.lo, b[1]),
		bytes(pk->total.hi, b[2]), pk->t_s, ts_peak(s) + 1,
		ts_npoints(s));
	return ferror(out) ? -1 : 0;
}
