/*
 * cmd_flame.c: allocprof flame: an interactive SVG flame graph of a heap
 * profile, written by flamegraph.c. Widths are estimated bytes of the view;
 * each frame's tooltip carries its confidence interval, computed from the
 * frame's summed statistics (hv_stat: HT sums and per-rate NB groups) the
 * same way report computes a site's, so the numbers agree across commands.
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
#include "views_cli.h"

static const char flame_usage[] =
	"usage: allocprof flame [--alloc|--inuse] [--requested|--usable]\n"
	"                       [--title TEXT] [--level L] [--width PX]\n"
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
	"  --level L     confidence level of the tooltips' intervals, in (0,1)\n"
	"                (default 0.95)\n"
	"  --width PX    image width in pixels, 200..100000 (default 1200)\n"
	"  --focus RE    keep stacks with a function matching RE (POSIX ERE)\n"
	"  --ignore RE   drop stacks with a function matching RE\n"
	"  --help        this text\n"
	"\n"
	"Exit status: 0 ok, 1 usage error, 2 unreadable or malformed profile.\n";

struct flame_ctx {
	double level;
};

static void stat_payload_add(void *into, const void *from)
{
	hv_stat_add(into, from);
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

/* Every stack of the view into the graph, root first. */
static int fill_graph(const hv_view *v, ap_fg *g)
{
	size_t cap = 64;
	const char **names = malloc(cap * sizeof *names);
	if (!names)
		return -1;
	for (size_t i = 0; i < hv_nstacks(v); i++) {
		const hv_site *s = hv_stack_at(v, i);
		if (s->nstack > cap) {
			cap = s->nstack;
			const char **nn = realloc(names, cap * sizeof *names);
			if (!nn) {
				free(names);
				return -1;
			}
			names = nn;
		}
		for (size_t k = 0; k < s->nstack; k++)
			names[k] = s->stack[s->nstack - 1 - k].function;
		double bytes = s->stat.bytes > 0 ? s->stat.bytes : 0;
		if (ap_fg_add(g, names, s->nstack, bytes, (double)s->stat.samples,
			      &s->stat)) {
			free(names);
			return -1;
		}
	}
	free(names);
	return 0;
}

static void subtitle(const hv_view *v, char *buf, size_t n)
{
	const hv_options *o = hv_view_options(v);
	const hv_stat *t = hv_total(v);
	snprintf(buf, n, "%s bytes (%s sizes), %llu samples, sampling rate %.0f%s%s",
		 o->view == HV_ALLOC ? "allocated" : "in-use",
		 hv_value_name(o->value), (unsigned long long)t->samples,
		 hv_rate(v), hv_mixed_rates(v) ? " (mixed rates)" : "",
		 hv_view_approximate(v) ? "; intervals approximate" : "");
}

static int write_flame(const hv_view *v, const char *title, double level,
		       unsigned width)
{
	ap_fg *g = ap_fg_create(sizeof(hv_stat), stat_payload_add);
	if (!g || fill_graph(v, g)) {
		ap_fg_destroy(g);
		ap_cli_error("out of memory");
		return AP_EXIT_INPUT;
	}
	char sub[256];
	subtitle(v, sub, sizeof sub);
	struct flame_ctx ctx = {level};
	ap_fg_options fo = {
		.title = title,
		.subtitle = sub,
		.unit_label = hv_view_options(v)->view == HV_ALLOC ? "allocated"
								   : "in use",
		.level = level,
		.interval = stat_interval,
		.interval_ctx = &ctx,
		.width = width,
	};
	int rc = ap_fg_write_svg(g, &fo, stdout);
	ap_fg_destroy(g);
	if (rc || fflush(stdout)) {
		ap_cli_error("writing the SVG failed");
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}

int ap_cmd_flame(int argc, char **argv)
{
	enum { OPT_TITLE = VC_OPT_END, OPT_WIDTH };
	static const struct option longopts[] = {
		VC_VIEW_LONGOPTS,
		{"title", required_argument, NULL, OPT_TITLE},
		{"width", required_argument, NULL, OPT_WIDTH},
		{NULL, 0, NULL, 0}};
	hv_options o;
	hv_options_default(&o);
	o.by = HV_BY_STACK;
	const char *title = NULL;
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
		} else if (c == OPT_WIDTH) {
			if (ap_parse_u64(optarg, &width) || width < 200 ||
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
	hv_view *v;
	if ((rc = vc_open((const char *const *)argv + optind,
			  (size_t)(argc - optind), &o, &v)))
		return rc;
	char deftitle[256];
	if (!title) {
		int more = argc - optind - 1;
		char extra[32] = "";
		if (more > 0)
			snprintf(extra, sizeof extra, " and %d more", more);
		snprintf(deftitle, sizeof deftitle, "%s: %s%s",
			 o.view == HV_ALLOC ? "Allocated bytes" : "In-use bytes",
			 argv[optind], extra);
		title = deftitle;
	}
	rc = write_flame(v, title, o.level, (unsigned)width);
	hv_destroy(v);
	return rc;
}
