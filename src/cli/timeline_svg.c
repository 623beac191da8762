/*
 * timeline_svg.c: the timeline as a self-contained SVG (timeline.h).
 * Layout: a plot of live bytes (y, binary units) against seconds since
 * the process started (x), the drawn sites stacked from the bottom in the
 * order tl_select chose (leaks first) and "other" on top; over them the
 * total's interval band (translucent, dashed edges) and the peak (a
 * dashed line, a dot and its label above the plot); leaks hatched in red
 * with a red top edge; a legend on the right. The data the script needs
 * (timeline.js: the hover details) rides on the elements as data-*
 * attributes; every area also has a <title>, so a viewer without
 * scripts still names it. Names are XML-escaped (text.h).
 */
#define _GNU_SOURCE
#include "timeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "text.h"

enum { TL_LEFT = 84, TL_RIGHT = 310, TL_TOP = 78, TL_BOTTOM = 64,
       TL_LEGEND_ROW = 18 };

/* Embedded by embed.cmake from timeline.js as tl_script. */
#include "timeline_js.h"

/* Hover hint; timeline.js restores it when the pointer leaves the plot. */
#define TL_HINT "Hover the plot: time, site, estimate and interval"

static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#8cd17d", "#a0cbe8"};
#define TL_OTHER_FILL "#c8c8c8"
#define TL_LEAK "#c00000"

static const char tl_style[] =
	"text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}\n"
	"#title{font-size:17px;text-anchor:middle}\n"
	"#subtitle{fill:#555;text-anchor:middle}\n"
	".tick{fill:#444;font-size:11px}\n"
	".grid{stroke:#e4e4e4;stroke-width:1}\n"
	".axis{stroke:#444;stroke-width:1}\n"
	".area{stroke:#fff;stroke-width:0.5}\n"
	".area.hot{stroke:#000;stroke-width:1.5}\n"
	".leakname{fill:" TL_LEAK ";font-weight:bold}\n"
	"#peak text{fill:" TL_LEAK ";font-weight:bold}\n"
	"#tip rect{fill:#fffff0;stroke:#888}\n";

/* The plot's scales: x in seconds, y in bytes. */
struct scale {
	double x0, x1, y0, y1; /* px: left, right, top, bottom */
	double tmin, tmax, ytop;
	double ystep, yunit;   /* y grid step (bytes), label unit */
	const char *yname;
	double tstep, tunit;   /* x grid step (s), label unit (s) */
	const char *tname;
};

static double X(const struct scale *c, double t)
{
	return c->x0 + (t - c->tmin) / (c->tmax - c->tmin) * (c->x1 - c->x0);
}

static double Y(const struct scale *c, double b)
{
	return c->y1 - b / c->ytop * (c->y1 - c->y0);
}

/* 1, 2 or 5 times a power of ten, at least x / 5. */
static double nice_step(double x)
{
	double p = pow(10, floor(log10(x / 5))), m = x / 5 / p;
	return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
}

static void make_scale(const ts_series *s, unsigned w, unsigned h,
		       struct scale *c)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	size_t np = ts_npoints(s);
	c->x0 = TL_LEFT;
	c->x1 = w - TL_RIGHT;
	c->y0 = TL_TOP;
	c->y1 = h - TL_BOTTOM;
	c->tmin = ts_point_at(s, 0)->t_s;
	c->tmax = ts_point_at(s, np - 1)->t_s;
	double ymax = 0;
	for (size_t i = 0; i < np; i++) {
		const ts_cell *t = &ts_point_at(s, i)->total;
		ymax = fmax(ymax, fmax(t->v.bytes, isfinite(t->hi) ? t->hi : 0));
	}
	size_t u = 0;
	c->yunit = 1;
	while (ymax / c->yunit >= 1024 && u + 1 < sizeof units / sizeof *units) {
		c->yunit *= 1024;
		u++;
	}
	c->yname = units[u];
	double v = ymax > 0 ? ymax / c->yunit : 1;
	c->ystep = nice_step(v) * c->yunit;
	c->ytop = ceil(ymax / c->ystep - 1e-9) * c->ystep;
	if (!(c->ytop > 0))
		c->ytop = c->ystep;
	double span = c->tmax - c->tmin;
	c->tunit = span > 3 * 3600 ? 3600 : span > 600 ? 60 : 1;
	c->tname = c->tunit == 3600 ? "h" : c->tunit == 60 ? "min" : "s";
	c->tstep = nice_step(span / c->tunit) * c->tunit;
}

static void write_axes(const struct scale *c, FILE *out)
{
	fputs("<g id=\"axes\">\n", out);
	for (double b = 0; b <= c->ytop * (1 + 1e-9); b += c->ystep) {
		double y = Y(c, b);
		fprintf(out, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" "
			     "x2=\"%.1f\" y2=\"%.1f\"/>", c->x0, y, c->x1, y);
		fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
			     "text-anchor=\"end\">%g %s</text>\n", c->x0 - 6,
			y + 4, b / c->yunit, c->yname);
	}
	double first = ceil(c->tmin / c->tstep - 1e-9) * c->tstep;
	for (double t = first; t <= c->tmax * (1 + 1e-9) + 1e-9; t += c->tstep) {
		double x = X(c, t);
		fprintf(out, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" "
			     "x2=\"%.1f\" y2=\"%.1f\"/>", x, c->y0, x, c->y1);
		fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
			     "text-anchor=\"middle\">%g</text>\n", x, c->y1 + 16,
			t / c->tunit);
	}
	fprintf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		     "y2=\"%.1f\"/>", c->x0, c->y1, c->x1, c->y1);
	fprintf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		     "y2=\"%.1f\"/>\n", c->x0, c->y0, c->x0, c->y1);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
		     "%s since the process started</text>\n",
		(c->x0 + c->x1) / 2, c->y1 + 38,
		c->tunit == 3600 ? "hours" : c->tunit == 60 ? "minutes" : "seconds");
	fprintf(out, "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
		     "transform=\"rotate(-90 14 %.1f)\">live bytes (estimated)"
		     "</text>\n</g>\n", (c->y0 + c->y1) / 2, (c->y0 + c->y1) / 2);
}

/* A list of numbers as an attribute value: whole bytes, or times. */
static void attr_list(FILE *out, const char *name, const double *v, size_t n,
		      bool times)
{
	fprintf(out, " %s=\"", name);
	for (size_t i = 0; i < n; i++) {
		double x = isfinite(v[i]) ? v[i] : 0.0;
		if (i)
			fputc(',', out);
		if (times)
			fprintf(out, "%.9g", x);
		else
			fprintf(out, "%.0f", x);
	}
	fputc('"', out);
}

/* The drawn layers: values per point (bottom first; the last may be
 * "other"), their running sums for stacking. */
struct layers {
	size_t n, np;
	double *b, *lo, *hi; /* n x np */
	double *cum;         /* (n + 1) x np: cum[k] = sum of layers < k */
};

static int layers_build(const ts_series *s, const tl_sel *sel,
			struct layers *L)
{
	L->np = ts_npoints(s);
	L->n = sel->n + tl_has_other(sel);
	size_t cells = (L->n + 1) * L->np;
	L->b = calloc(cells, sizeof *L->b);
	L->lo = calloc(cells, sizeof *L->lo);
	L->hi = calloc(cells, sizeof *L->hi);
	L->cum = calloc(cells + L->np, sizeof *L->cum);
	if (!L->b || !L->lo || !L->hi || !L->cum)
		return -1;
	for (size_t k = 0; k < L->n; k++) {
		for (size_t i = 0; i < L->np; i++) {
			ts_cell c = k < sel->n ? ts_cell_at(s, i, sel->site[k])
					       : sel->other[i];
			size_t at = k * L->np + i;
			L->b[at] = c.v.bytes > 0 ? c.v.bytes : 0;
			L->lo[at] = c.lo;
			L->hi[at] = c.hi;
			L->cum[(k + 1) * L->np + i] = L->cum[k * L->np + i] + L->b[at];
		}
	}
	return 0;
}

static void layers_free(struct layers *L)
{
	free(L->b);
	free(L->lo);
	free(L->hi);
	free(L->cum);
}

/* The outline of layer k: its top edge left to right, then (closed) its
 * bottom edge right to left. */
static void area_path(const ts_series *s, const struct scale *c,
		      const struct layers *L, size_t k, bool closed, FILE *out)
{
	fputs(" d=\"", out);
	for (size_t i = 0; i < L->np; i++)
		fprintf(out, "%c%.1f,%.1f", i ? 'L' : 'M',
			X(c, ts_point_at(s, i)->t_s),
			Y(c, L->cum[(k + 1) * L->np + i]));
	for (size_t i = L->np; closed && i-- > 0;)
		fprintf(out, "L%.1f,%.1f", X(c, ts_point_at(s, i)->t_s),
			Y(c, L->cum[k * L->np + i]));
	fputs(closed ? "Z\"" : "\"", out);
}

static const char *layer_name(const ts_series *s, const tl_sel *sel, size_t k)
{
	return k < sel->n ? ts_site_at(s, sel->site[k])->name : "other";
}

static void area_title(const ts_series *s, const lk_result *lk,
		       const tl_sel *sel, const struct layers *L, size_t k,
		       FILE *out)
{
	char mx[32], last[32], rate[96], what[48];
	double m = 0;
	for (size_t i = 0; i < L->np; i++)
		m = fmax(m, L->b[k * L->np + i]);
	ap_cli_format_bytes(m, AP_BYTES_FIXED, mx, sizeof mx);
	ap_cli_format_bytes(L->b[k * L->np + L->np - 1], AP_BYTES_FIXED, last,
			    sizeof last);
	fputs("<title>", out);
	txt_xml_escape(out, layer_name(s, sel, k), 0);
	if (k >= sel->n)
		fprintf(out, " (%s)", tl_other_what(sel, true, what, sizeof what));
	fprintf(out, "&#10;largest %s, at the end %s", mx, last);
	const lk_row *row = k < sel->n ? tl_leak_row(lk, sel->site[k]) : NULL;
	if (row && row->r.leak) {
		lk_format_rate(row->r.rate, row->r.rate_lo, row->r.rate_hi, rate,
			       sizeof rate);
		fprintf(out, "&#10;LEAK: %s, q %.2g", rate, row->r.q);
	}
	fputs("</title>", out);
}

static void write_areas(const ts_series *s, const lk_result *lk,
			const tl_sel *sel, const struct scale *c,
			const struct layers *L, FILE *out)
{
	for (size_t k = 0; k < L->n; k++) {
		bool leak = k < sel->n && lk && lk->is_leak[sel->site[k]];
		fprintf(out, "<path class=\"area\" data-k=\"%zu\" data-leak=\"%d\" "
			     "data-n=\"", k, leak);
		txt_xml_escape(out, layer_name(s, sel, k), 0);
		fputc('"', out);
		attr_list(out, "data-b", L->b + k * L->np, L->np, false);
		attr_list(out, "data-lo", L->lo + k * L->np, L->np, false);
		attr_list(out, "data-hi", L->hi + k * L->np, L->np, false);
		fprintf(out, " fill=\"%s\"", k < sel->n
			? palette[k % (sizeof palette / sizeof *palette)]
			: TL_OTHER_FILL);
		area_path(s, c, L, k, true, out);
		fputc('>', out);
		area_title(s, lk, sel, L, k, out);
		fputs("</path>\n", out);
	}
	/* leaks: hatched, with a red top edge, over every area */
	for (size_t k = 0; lk && k < sel->n; k++) {
		if (!lk->is_leak[sel->site[k]])
			continue;
		fputs("<path class=\"leakmark\" fill=\"url(#leakhatch)\" "
		      "pointer-events=\"none\"", out);
		area_path(s, c, L, k, true, out);
		fputs("/>\n<path class=\"leakline\" fill=\"none\" stroke=\""
		      TL_LEAK "\" stroke-width=\"2.5\" pointer-events=\"none\"",
		      out);
		area_path(s, c, L, k, false, out);
		fputs("/>\n", out);
	}
}

/* The total's interval band: a translucent polygon with dashed edges. */
static void write_band(const ts_series *s, const struct scale *c, FILE *out)
{
	size_t np = ts_npoints(s);
	fputs("<path id=\"band\" fill=\"#000\" fill-opacity=\"0.13\" "
	      "pointer-events=\"none\" d=\"", out);
	for (size_t i = 0; i < np; i++) {
		const ts_point *p = ts_point_at(s, i);
		fprintf(out, "%c%.1f,%.1f", i ? 'L' : 'M', X(c, p->t_s),
			Y(c, fmin(p->total.hi, c->ytop)));
	}
	for (size_t i = np; i-- > 0;) {
		const ts_point *p = ts_point_at(s, i);
		fprintf(out, "L%.1f,%.1f", X(c, p->t_s),
			Y(c, fmax(p->total.lo, 0)));
	}
	fputs("Z\"/>\n", out);
	for (int edge = 0; edge < 2; edge++) {
		fprintf(out, "<path class=\"bandedge\" fill=\"none\" stroke=\"#333\" "
			     "stroke-dasharray=\"4,3\" pointer-events=\"none\" d=\"");
		for (size_t i = 0; i < np; i++) {
			const ts_point *p = ts_point_at(s, i);
			double b = edge ? fmin(p->total.hi, c->ytop)
					: fmax(p->total.lo, 0);
			fprintf(out, "%c%.1f,%.1f", i ? 'L' : 'M', X(c, p->t_s),
				Y(c, b));
		}
		fputs("\"/>\n", out);
	}
}

/* The peak: a dashed line from the axis to the total, a dot, and its
 * label above the plot. */
static void write_peak(const ts_series *s, const struct scale *c, FILE *out)
{
	size_t k = ts_peak(s);
	const ts_point *p = ts_point_at(s, k);
	char b[32], lo[32], hi[32];
	ap_cli_format_bytes(p->total.v.bytes, AP_BYTES_FIXED, b, sizeof b);
	ap_cli_format_bytes(p->total.lo, AP_BYTES_FIXED, lo, sizeof lo);
	ap_cli_format_bytes(p->total.hi, AP_BYTES_FIXED, hi, sizeof hi);
	double x = X(c, p->t_s), y = Y(c, p->total.v.bytes);
	const char *anchor = x < c->x0 + 120 ? "start"
			     : x > c->x1 - 120 ? "end" : "middle";
	fprintf(out, "<g id=\"peak\" data-i=\"%zu\" data-t=\"%.9g\" "
		     "data-b=\"%.0f\" pointer-events=\"none\">", k, p->t_s,
		p->total.v.bytes);
	fprintf(out, "<title>peak: %s [%s, %s] at %.3f s</title>", b, lo, hi,
		p->t_s);
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		     "stroke=\"" TL_LEAK "\" stroke-dasharray=\"5,3\"/>", x,
		c->y0 - 4, x, c->y1);
	fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\""
		     TL_LEAK "\" stroke=\"#fff\"/>", x, y);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">peak %s "
		     "at %.1f s [%s, %s]</text></g>\n", x, c->y0 - 8, anchor, b,
		p->t_s, lo, hi);
}

static void legend_entry(FILE *out, double x, double *y, const char *fill,
			 const char *name, const char *cls)
{
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" "
		     "fill=\"%s\"/>", x, *y - 10, fill);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\"%s%s%s>", x + 18, *y,
		cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
	txt_xml_escape(out, name, (TL_RIGHT - 50) / 7);
	fputs("</text>\n", out);
	*y += TL_LEGEND_ROW;
}

/* Top of the stack first, as the areas read from the top. */
static void write_legend(const ts_series *s, const lk_result *lk,
			 const tl_sel *sel, const struct scale *c,
			 const struct layers *L, FILE *out)
{
	double x = c->x1 + 24, y = c->y0 + 4;
	char rate[96], other[64], what[48];
	fputs("<g id=\"legend\">\n", out);
	for (size_t k = L->n; k-- > 0;) {
		if (k >= sel->n) {
			snprintf(other, sizeof other, "other (%s)",
				 tl_other_what(sel, true, what, sizeof what));
			legend_entry(out, x, &y, TL_OTHER_FILL, other, NULL);
			continue;
		}
		const lk_row *row = tl_leak_row(lk, sel->site[k]);
		bool leak = row && row->r.leak;
		legend_entry(out, x, &y, palette[k % (sizeof palette / sizeof *palette)],
			     ts_site_at(s, sel->site[k])->name,
			     leak ? "leakname" : NULL);
		if (!leak)
			continue;
		lk_format_rate(row->r.rate, row->r.rate_lo, row->r.rate_hi, rate,
			       sizeof rate);
		fprintf(out, "<text class=\"leakname\" x=\"%.1f\" y=\"%.1f\">"
			     "LEAK %s</text>\n", x + 18, y, rate);
		y += TL_LEGEND_ROW;
	}
	y += 6;
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" "
		     "fill=\"#000\" fill-opacity=\"0.13\" stroke=\"#333\" "
		     "stroke-dasharray=\"3,2\"/><text x=\"%.1f\" y=\"%.1f\">total: "
		     "%g%% interval</text>\n", x, y - 10, x + 18, y,
		100 * ts_series_options(s)->hv.level);
	y += TL_LEGEND_ROW;
	fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"" TL_LEAK
		     "\"/><text x=\"%.1f\" y=\"%.1f\">peak of the total</text>\n",
		x + 6, y - 4, x + 18, y);
	if (lk && lk->nleaks) {
		y += TL_LEGEND_ROW;
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" "
			     "height=\"12\" fill=\"url(#leakhatch)\" stroke=\""
			     TL_LEAK "\"/><text x=\"%.1f\" y=\"%.1f\">leak "
			     "(FDR %g)</text>\n", x, y - 10, x + 18, y, lk->fdr);
	}
	fputs("</g>\n", out);
}

static void write_head(const ts_series *s, const tl_options *o, unsigned w,
		       unsigned h, FILE *out)
{
	char desc[160];
	ts_describe(s, desc, sizeof desc);
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"data-level=\"%g\">\n", w, h, w, h, ts_series_options(s)->hv.level);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n",
		tl_style);
	fputs("<defs><pattern id=\"leakhatch\" width=\"8\" height=\"8\" "
	      "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
	      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"" TL_LEAK
	      "\" stroke-width=\"2\" stroke-opacity=\"0.55\"/></pattern></defs>\n",
	      out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" "
		     "fill=\"#fff\"/>\n", w, h);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"22\">", w / 2);
	txt_xml_escape(out, o->title ? o->title : "Live heap over time", 0);
	fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%u\" y=\"40\">", w / 2);
	txt_xml_escape(out, desc, 0);
	fprintf(out, "; by %s</text>\n", hv_by_name(ts_series_options(s)->hv.by));
}

/* The hover layer: guide line, tooltip box and the details line. */
static void write_hover(const struct scale *c, unsigned h, FILE *out)
{
	fprintf(out, "<line id=\"guide\" x1=\"0\" y1=\"%.1f\" x2=\"0\" "
		     "y2=\"%.1f\" stroke=\"#000\" stroke-width=\"0.8\" "
		     "pointer-events=\"none\" style=\"display:none\"/>\n",
		c->y0, c->y1);
	fputs("<g id=\"tip\" pointer-events=\"none\" style=\"display:none\">"
	      "<rect x=\"0\" y=\"0\" width=\"10\" height=\"10\" rx=\"3\"/>"
	      "<text id=\"tiptext\" x=\"0\" y=\"0\"></text></g>\n", out);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%u\">%s</text>\n",
		10, h - 8, TL_HINT);
}

int tl_write_svg(const ts_series *s, const lk_result *lk, const tl_sel *sel,
		 const tl_options *opt, FILE *out)
{
	tl_options o = {0};
	if (opt)
		o = *opt;
	unsigned w = o.width ? o.width : 1200, h = o.height ? o.height : 640;
	struct scale c;
	struct layers L = {0};
	if (ts_npoints(s) < 2 || layers_build(s, sel, &L)) {
		layers_free(&L);
		return -1;
	}
	make_scale(s, w, h, &c);
	write_head(s, &o, w, h, out);
	write_axes(&c, out);
	size_t np = ts_npoints(s);
	double *t = malloc(np * 4 * sizeof *t);
	if (!t) {
		layers_free(&L);
		return -1;
	}
	for (size_t i = 0; i < np; i++) {
		const ts_point *p = ts_point_at(s, i);
		t[i] = p->t_s;
		t[np + i] = p->total.v.bytes;
		t[2 * np + i] = p->total.lo;
		t[3 * np + i] = p->total.hi;
	}
	fprintf(out, "<g id=\"plot\" data-x0=\"%.1f\" data-x1=\"%.1f\" "
		     "data-y0=\"%.1f\" data-y1=\"%.1f\" data-tmin=\"%.9g\" "
		     "data-tmax=\"%.9g\" data-ytop=\"%.0f\"", c.x0, c.x1, c.y0,
		c.y1, c.tmin, c.tmax, c.ytop);
	attr_list(out, "data-t", t, np, true);
	attr_list(out, "data-total", t + np, np, false);
	attr_list(out, "data-lo", t + 2 * np, np, false);
	attr_list(out, "data-hi", t + 3 * np, np, false);
	fprintf(out, ">\n<rect id=\"plotbg\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		     "height=\"%.1f\" fill=\"#fff\" fill-opacity=\"0\"/>\n", c.x0,
		c.y0, c.x1 - c.x0, c.y1 - c.y0);
	free(t);
	write_areas(s, lk, sel, &c, &L, out);
	write_band(s, &c, out);
	write_peak(s, &c, out);
	fputs("</g>\n", out);
	write_legend(s, lk, sel, &c, &L, out);
	write_hover(&c, h, out);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]>"
		     "</script>\n</svg>\n", tl_script);
	layers_free(&L);
	return ferror(out) ? -1 : 0;
}
