/*
 * flameview.c: heap views into flame graphs (flameview.h). Widths are
 * estimated bytes of the view; each frame's tooltip carries its confidence
 * interval, computed from the frame's summed statistics (hv_stat: HT sums
 * and per-rate NB groups) the same way report computes a site's, so the
 * numbers agree across commands. In a differential graph widths stay the
 * profile's, each frame is coloured by its change since BASE as allocprof
 * diff judges it (diffstat.h vu_diff_stats), and the tooltip adds the
 * change and its interval.
 */
#define _GNU_SOURCE
#include "flameview.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "diffstat.h"
#include "flamegraph.h"

/*
 * Payload of a frame. Plain graphs carry only nw (the profile's sums); a
 * differential graph (--base) carries both sides' sums. nw comes first so
 * the interval callback reads either layout as an hv_stat.
 */
struct flame_pair {
	hv_stat nw, base;
};

struct flame_ctx {
	double level;
	const hv_view *vb, *vn; /* vb NULL: not a differential graph */
	bool cached;            /* one-entry cache: chains of frames with */
	struct flame_pair last; /*   equal sums ask for the same diff, */
	vu_diff d;              /*   colour and note one after the other */
};

static void stat_payload_add(void *into, const void *from)
{
	hv_stat_add(into, from);
}

static void pair_payload_add(void *into, const void *from)
{
	struct flame_pair *a = into;
	const struct flame_pair *b = from;
	hv_stat_add(&a->nw, &b->nw);
	hv_stat_add(&a->base, &b->base);
}

static int stat_interval(void *ctx, const void *payload, double *lo,
			 double *hi)
{
	const struct flame_ctx *c = ctx;
	hv_stat s = *(const hv_stat *)payload;
	hv_stat_finish(&s, c->level);
	*lo = s.bytes_lo;
	*hi = s.bytes_hi;
	return isnan(*lo) || isnan(*hi);
}

static const vu_diff *pair_diff(struct flame_ctx *c, const struct flame_pair *p)
{
	if (c->cached && !memcmp(&c->last, p, sizeof *p))
		return &c->d;
	c->last = *p;
	c->cached = true;
	if (vu_diff_stats(c->vb, &p->base, c->vn, &p->nw, c->level, &c->d)) {
		c->d.lo = c->d.hi = (double)NAN;
		c->d.significant = false;
	}
	return &c->d;
}

/* Red for a significant growth, blue for a significant shrink, deeper the
 * larger the change relative to the frame; grey when not significant. */
static int diff_colour(void *ctx, const void *payload, char *buf, size_t n)
{
	const struct flame_pair *p = payload;
	const vu_diff *d = pair_diff(ctx, p);
	if (!d->significant) {
		snprintf(buf, n, "rgb(205,205,210)");
		return 0;
	}
	double ref = d->change > 0 ? p->nw.bytes : p->base.bytes;
	double t = ref > 0 ? fabs(d->change) / ref : 1;
	unsigned v = (unsigned)lround(215 - 175 * fmin(t, 1.0));
	if (d->change > 0)
		snprintf(buf, n, "rgb(255,%u,%u)", v, v);
	else
		snprintf(buf, n, "rgb(%u,%u,255)", v, v);
	return 0;
}

static int diff_note(void *ctx, const void *payload, char *buf, size_t n)
{
	struct flame_ctx *c = ctx;
	const struct flame_pair *p = payload;
	const vu_diff *d = pair_diff(c, p);
	char ch[40], lo[40], hi[40], base[40];
	ap_cli_format_bytes(d->change, AP_BYTES_FIXED, ch, sizeof ch);
	ap_cli_format_bytes(d->lo, AP_BYTES_FIXED, lo, sizeof lo);
	ap_cli_format_bytes(d->hi, AP_BYTES_FIXED, hi, sizeof hi);
	ap_cli_format_bytes(p->base.bytes, AP_BYTES_FIXED, base, sizeof base);
	snprintf(buf, n, "vs BASE (%s): %s%s, %g%% interval [%s, %s], %s",
		 base, d->change > 0 ? "+" : "", ch, 100 * c->level, lo, hi,
		 d->significant ? "significant" : "not significant");
	return 0;
}

/*
 * Every stack of v into the graph, root first. Plain graphs: payload = the
 * stack's hv_stat. Differential ones: the stat goes into the base or nw
 * half; only NEW's stacks give width (a frame BASE alone has stays
 * invisible: allocprof diff lists it).
 */
static int fill_graph(const hv_view *v, ap_fg *g, bool differential,
		      bool is_base)
{
	size_t cap = 64;
	const char **names = malloc(cap * sizeof *names);
	struct flame_pair *pair = calloc(1, sizeof *pair);
	int rc = -1;
	if (!names || !pair)
		goto out;
	for (size_t i = 0; i < hv_nstacks(v); i++) {
		const hv_site *s = hv_stack_at(v, i);
		if (s->nstack > cap) {
			cap = s->nstack;
			const char **nn = realloc(names, cap * sizeof *names);
			if (!nn)
				goto out;
			names = nn;
		}
		for (size_t k = 0; k < s->nstack; k++)
			names[k] = s->stack[s->nstack - 1 - k].function;
		double bytes = s->stat.bytes > 0 && !is_base ? s->stat.bytes : 0;
		double samples = is_base ? 0 : (double)s->stat.samples;
		const void *payload = &s->stat;
		if (differential) {
			memset(pair, 0, sizeof *pair);
			*(is_base ? &pair->base : &pair->nw) = s->stat;
			payload = pair;
		}
		if (ap_fg_add(g, names, s->nstack, bytes, samples, payload))
			goto out;
	}
	rc = 0;
out:
	free(names);
	free(pair);
	return rc;
}

static void subtitle(const hv_view *v, bool differential, double level,
		     char *buf, size_t n)
{
	const hv_options *o = hv_view_options(v);
	const hv_stat *t = hv_total(v);
	char legend[160] = "";
	if (differential)
		snprintf(legend, sizeof legend,
			 "; red: grew since BASE, blue: shrank (significant at "
			 "%g%%), grey: no significant change", 100 * level);
	snprintf(buf, n, "%s bytes (%s sizes), %llu samples, sampling rate %.0f%s%s%s",
		 o->view == HV_ALLOC ? "allocated" : "in-use",
		 hv_value_name(o->value), (unsigned long long)t->samples,
		 hv_rate(v), hv_mixed_rates(v) ? " (mixed rates)" : "",
		 hv_view_approximate(v) ? "; intervals approximate" : "", legend);
}

int flameview_write(const hv_view *v, const hv_view *vb, const char *title,
		    double level, unsigned width, FILE *out, char *err,
		    size_t errlen)
{
	bool diff = vb != NULL;
	ap_fg *g = diff ? ap_fg_create(sizeof(struct flame_pair), pair_payload_add)
			: ap_fg_create(sizeof(hv_stat), stat_payload_add);
	struct flame_ctx *ctx = calloc(1, sizeof *ctx);
	if (!g || !ctx || fill_graph(v, g, diff, false) ||
	    (diff && fill_graph(vb, g, true, true))) {
		ap_fg_destroy(g);
		free(ctx);
		ap_cli_seterr(err, errlen, "out of memory");
		return AP_EXIT_INPUT;
	}
	char sub[384];
	subtitle(v, diff, level, sub, sizeof sub);
	ctx->level = level;
	ctx->vb = vb;
	ctx->vn = v;
	ap_fg_options fo = {
		.title = title,
		.subtitle = sub,
		.unit_label = hv_view_options(v)->view == HV_ALLOC ? "allocated"
								   : "in use",
		.level = level,
		.interval = stat_interval,
		.colour = diff ? diff_colour : NULL,
		.note = diff ? diff_note : NULL,
		.ctx = ctx,
		.width = width,
	};
	int rc = ap_fg_write_svg(g, &fo, out);
	ap_fg_destroy(g);
	free(ctx);
	if (rc || fflush(out)) {
		ap_cli_seterr(err, errlen, "writing the SVG failed");
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}

