/*
 * cmd_flame.c: allocprof flame: an interactive SVG flame graph of a heap
 * profile, written by flamegraph.c. Widths are estimated bytes of the view;
 * each frame's tooltip carries its confidence interval, computed from the
 * frame's summed statistics (hv_stat: HT sums and per-rate NB groups) the
 * same way report computes a site's, so the numbers agree across commands.
 * With --base the graph is differential: widths stay the profile's, each
 * frame is coloured by its change since BASE as allocprof diff judges it
 * (diffstat.h vu_diff_stats), and the tooltip adds the change and its interval.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "flamegraph.h"
#include "heapview.h"
#include "cmdopts.h"
#include "diffstat.h"

static const char flame_usage[] =
	"usage: allocprof flame [--alloc|--inuse] [--requested|--usable]\n"
	"                       [--title TEXT] [--level L] [--width PX]\n"
	"                       [--base BASE]\n"
	"                       [--focus REGEX] [--ignore REGEX] PROFILE...\n"
	"                       > flame.svg\n"
	"\n"
	"Write an interactive SVG flame graph of the profile to standard\n"
	"output (several profiles are merged first). The root is at the\n"
	"bottom, callers below callees; a frame's width is its estimated bytes\n"
	"(unbiased, Horvitz-Thompson). Open the file in a web browser:\n"
	"  - hover a frame: its tooltip gives the function, bytes, share of\n"
	"    the total, the confidence interval at level L and the number of\n"
	"    samples behind the estimate;\n"
	"  - click a frame to zoom into it; 'Reset zoom' (or Escape) goes back;\n"
	"  - Ctrl-F, '/' or 'Search' highlights frames whose name matches a\n"
	"    regular expression and shows the share of bytes they cover\n"
	"    (nested matches counted once); Escape or 'Clear search' ends it.\n"
	"Frames narrower than 0.1 px are left out (and so not searched).\n"
	"\n"
	"  --inuse       bytes still allocated when the profile was written\n"
	"                (default)\n"
	"  --alloc       all bytes allocated over the run\n"
	"  --requested   sizes as requested by the program (default)\n"
	"  --usable      usable sizes reported by the allocator\n"
	"  --title TEXT  heading of the graph (default: the profile's name)\n"
	"  --base BASE   differential graph: widths are PROFILE's, colours the\n"
	"                change since BASE (red grew, blue shrank, grey no\n"
	"                significant change at level L, as 'allocprof diff'\n"
	"                decides); tooltips add the change and its interval\n"
	"  --level L     confidence level of the tooltips' intervals, in (0,1)\n"
	"                (default 0.95)\n"
	"  --width PX    image width in pixels, 200..100000 (default 1200)\n"
	"  --focus RE    keep stacks with a function matching RE (POSIX ERE)\n"
	"  --ignore RE   drop stacks with a function matching RE\n"
	"  --help        this text\n"
	"\n"
	"Exit status: 0 ok, 1 usage error, 2 unreadable or malformed profile.\n";

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

/* vb: BASE of a differential graph, or NULL. */
static int write_flame(const hv_view *v, const hv_view *vb, const char *title,
		       double level, unsigned width)
{
	bool diff = vb != NULL;
	ap_fg *g = diff ? ap_fg_create(sizeof(struct flame_pair), pair_payload_add)
			: ap_fg_create(sizeof(hv_stat), stat_payload_add);
	struct flame_ctx *ctx = calloc(1, sizeof *ctx);
	if (!g || !ctx || fill_graph(v, g, diff, false) ||
	    (diff && fill_graph(vb, g, true, true))) {
		ap_fg_destroy(g);
		free(ctx);
		ap_cli_error("out of memory");
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
	int rc = ap_fg_write_svg(g, &fo, stdout);
	ap_fg_destroy(g);
	free(ctx);
	if (rc || fflush(stdout)) {
		ap_cli_error("writing the SVG failed");
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}

int ap_cmd_flame(int argc, char **argv)
{
	enum { OPT_TITLE = VC_OPT_END, OPT_WIDTH, OPT_BASE };
	static const struct option longopts[] = {
		VC_VIEW_LONGOPTS,
		{"title", required_argument, NULL, OPT_TITLE},
		{"width", required_argument, NULL, OPT_WIDTH},
		{"base", required_argument, NULL, OPT_BASE},
		{NULL, 0, NULL, 0}};
	hv_options o;
	hv_options_default(&o);
	o.by = HV_BY_STACK;
	const char *title = NULL, *base = NULL;
	uint64_t width = 1200;
	opterr = 0;
	optind = 1;
	int c, rc;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h' || c == VC_OPT_HELP) {
			fputs(flame_usage, stdout);
			return AP_EXIT_OK;
		} else if (c == OPT_TITLE) {
			title = optarg;
		} else if (c == OPT_BASE) {
			base = optarg;
		} else if (c == OPT_WIDTH) {
			if (ap_cli_parse_u64(optarg, &width) || width < 200 ||
			    width > 100000) {
				ap_cli_error("--width wants pixels from 200 to "
					     "100000, not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
		} else if ((rc = vc_view_option(c, optarg, &o)) < 0) {
			return vc_bad_option("flame", argv);
		} else if (rc) {
			return rc;
		}
	}
	if (optind >= argc) {
		ap_cli_error("no profile given (see 'allocprof flame --help')");
		return AP_EXIT_USAGE;
	}
	for (int i = optind; base && !strcmp(base, "-") && i < argc; i++) {
		if (!strcmp(argv[i], "-")) {
			ap_cli_error("--base and PROFILE cannot both be "
				     "standard input");
			return AP_EXIT_USAGE;
		}
	}
	hv_view *v, *vb = NULL;
	if ((rc = vc_open((const char *const *)argv + optind,
			  (size_t)(argc - optind), &o, &v)))
		return rc;
	if (base && (rc = vc_open(&base, 1, &o, &vb))) {
		hv_destroy(v);
		return rc;
	}
	char deftitle[256];
	if (!title) {
		int more = argc - optind - 1;
		char extra[32] = "";
		if (more > 0)
			snprintf(extra, sizeof extra, " and %d more", more);
		snprintf(deftitle, sizeof deftitle, "%s: %s%s%s%s",
			 o.view == HV_ALLOC ? "Allocated bytes" : "In-use bytes",
			 argv[optind], extra, base ? " vs " : "",
			 base ? base : "");
		title = deftitle;
	}
	rc = write_flame(v, vb, title, o.level, (unsigned)width);
	hv_destroy(v);
	hv_destroy(vb);
	return rc;
}
