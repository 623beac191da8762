/*
 * cmd_report.c: `allocprof report`, the top allocation sites of one or more
 * heap profiles, each estimate with its confidence interval. This file
 * parses the options; report.h loads, computes and writes the report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/estimate.h" /* AP_NB_MAX_SAMPLES */
#include "allocprof/options.h"  /* durations */
#include "cli_util.h"
#include "cmdopts.h"
#include "commands.h"
#include "report.h"
#include "report_time.h"

static void report_usage(FILE *f)
{
	fputs("usage: allocprof report [--alloc|--inuse] [--by function|line|stack]\n"
	      "                        [--top N] [--level L] [--requested|--usable]\n"
	      "                        [--focus REGEX] [--ignore REGEX] [--size MIN:MAX]\n"
	      "                        [--sizes] [--memory] [--json] [--no-symbolize]\n"
	      "                        [--skip REGEX] [--no-skip] [--full-names]\n"
	      "                        PROFILE...\n"
	      "       allocprof report --peak [options] PROFILE\n"
	      "       allocprof report --lifetimes [--short-lived T] [--by KEY]\n"
	      "                        [--top N] [--level L] [--json] PROFILE\n"
	      "\n"
	      "Top allocation sites of heap profiles (gzip'd pprof; several are merged\n"
	      "first, unbias-then-sum) with estimated bytes and objects, each with a\n"
	      "confidence interval at level L, the sample counts behind them and the\n"
	      "share of the total.\n"
	      "\n"
	      "  --alloc, --inuse      everything allocated, or still live at the dump\n"
	      "                        (default: inuse)\n"
	      "  --by KEY              function (first frame outside the allocator,\n"
	      "                        allocprof and the C++ runtime; default), line,\n"
	      "                        or stack (leaf first: site <- caller <- ...)\n"
	      "  --top N               show N sites (default 20; 0 = all)\n"
	      "  --level L             confidence level, 0 < L < 1 (default 0.95)\n"
	      "  --requested, --usable bytes asked for (default), or usable size\n"
	      "  --focus REGEX         only samples with a frame matching (POSIX ERE)\n"
	      "  --ignore REGEX        drop samples with a frame matching\n"
	      "  --size MIN:MAX        only allocations of MIN..MAX bytes (either may be\n"
	      "                        empty: 4096: means 4096 and up)\n"
	      "  --sizes               also show the size and lifetime distributions\n"
	      "  --memory              also explain the process's resident memory, from\n"
	      "                        the live heap to RSS (one profile; docs/MEMORY.md)\n"
	      "  --json                one JSON object (see docs/REPORTS.md)\n"
	      "  --peak                the heap at the highest in-use total the runtime\n"
	      "                        saw (timeline= or peak=1), by site, as --inuse\n"
	      "  --lifetimes           per site the Kaplan-Meier median and quartiles of\n"
	      "                        lifetimes (live blocks censored), and the most\n"
	      "                        temporary allocations (docs/TIME.md)\n"
	      "  --short-lived T       --lifetimes: freed within T is short-lived\n"
	      "                        (1ms, 500us, 2s; default 1ms)\n"
	      "  --no-symbolize        show addresses; do not read the binaries\n"
	      VC_FRAME_HELP
	      "\n"
	      "Exit status: 0 ok, 1 usage error, 2 unreadable or invalid input.\n",
	      f);
	fprintf(f,
		"\nIntervals: bytes use the exact negative-binomial interval ([R4]:\n"
		"failed trials before the s-th sampled byte) when a site has fewer than\n"
		"%d samples, and the Horvitz-Thompson normal interval (estimate +- z *\n"
		"sqrt(variance estimate)) from %d samples up; objects use the exact\n"
		"Poisson interval of the sample count scaled by the mean weight below %d\n"
		"samples, HT normal above. At rate 1 every number is exact. For profiles\n"
		"without allocprof's sample counts (e.g. Go's) counts are derived from\n"
		"sizes and the period and the intervals are marked approximate.\n"
		"See docs/REPORTS.md.\n",
		AP_NB_MAX_SAMPLES, AP_NB_MAX_SAMPLES, AP_NB_MAX_SAMPLES);
}

static int parse_size_range(const char *s, hv_options *o)
{
	const char *colon = strchr(s, ':');
	if (!colon || strchr(colon + 1, ':'))
		return -1;
	char lo[32];
	size_t n = (size_t)(colon - s);
	if (n >= sizeof lo)
		return -1;
	memcpy(lo, s, n);
	lo[n] = 0;
	uint64_t a = 0, b = UINT64_MAX;
	if ((n && ap_cli_parse_u64(lo, &a)) || (colon[1] && ap_cli_parse_u64(colon + 1, &b)))
		return -1;
	if (a > b)
		return -1;
	o->size_min = a;
	o->size_max = b;
	return 0;
}

/* Parse argv; returns -1 to continue, else the exit status. */
static int parse(int argc, char **argv, report_options *r)
{
	enum { O_ALLOC = VC_OPT_END, O_INUSE, O_BY, O_TOP, O_LEVEL, O_REQ, O_USABLE,
	       O_FOCUS, O_IGNORE, O_SIZE, O_SIZES, O_JSON, O_NOSYM, O_MEMORY,
	       O_PEAK, O_LIFE, O_SHORT };
	static const struct option opts[] = {
		{"alloc", no_argument, NULL, O_ALLOC},
		{"inuse", no_argument, NULL, O_INUSE},
		{"by", required_argument, NULL, O_BY},
		{"top", required_argument, NULL, O_TOP},
		{"level", required_argument, NULL, O_LEVEL},
		{"requested", no_argument, NULL, O_REQ},
		{"usable", no_argument, NULL, O_USABLE},
		{"focus", required_argument, NULL, O_FOCUS},
		{"ignore", required_argument, NULL, O_IGNORE},
		{"size", required_argument, NULL, O_SIZE},
		{"sizes", no_argument, NULL, O_SIZES},
		{"memory", no_argument, NULL, O_MEMORY},
		{"json", no_argument, NULL, O_JSON},
		{"no-symbolize", no_argument, NULL, O_NOSYM},
		{"peak", no_argument, NULL, O_PEAK},
		{"lifetimes", no_argument, NULL, O_LIFE},
		{"short-lived", required_argument, NULL, O_SHORT},
		{"help", no_argument, NULL, 'h'},
		VC_FRAME_LONGOPTS,
		{NULL, 0, NULL, 0}};
	int c;
	report_options_default(r);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_ALLOC: r->hv.view = HV_ALLOC; break;
		case O_INUSE: r->hv.view = HV_INUSE; break;
		case O_REQ: r->hv.value = HV_REQUESTED; break;
		case O_USABLE: r->hv.value = HV_USABLE; break;
		case O_FOCUS: r->hv.focus = optarg; break;
		case O_IGNORE: r->hv.ignore = optarg; break;
		case O_SIZES: r->sizes = true; break;
		case O_MEMORY: r->memory = true; break;
		case O_JSON: r->json = true; break;
		case O_NOSYM: r->hv.symbolize = false; break;
		case O_PEAK: r->peak = true; break;
		case O_LIFE: r->lifetimes = true; break;
		case O_SHORT: {
			uint64_t ns;
			if (ap_options_parse_duration_ns(optarg, strlen(optarg), &ns)) {
				ap_cli_error("--short-lived wants a duration (1ms, 500us), "
					     "not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
			r->short_ns = (double)ns;
			break;
		}
		case 'h': report_usage(stdout); return AP_EXIT_OK;
		case O_BY:
			if (!strcmp(optarg, "function"))
				r->hv.by = HV_BY_FUNCTION;
			else if (!strcmp(optarg, "line"))
				r->hv.by = HV_BY_LINE;
			else if (!strcmp(optarg, "stack"))
				r->hv.by = HV_BY_STACK;
			else {
				ap_cli_error("--by must be function, line or stack, not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
			break;
		case O_TOP:
			if (ap_cli_parse_u64(optarg, &r->top)) {
				ap_cli_error("--top needs a number >= 0, not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
			break;
		case O_LEVEL:
			if (ap_cli_parse_level(optarg, &r->hv.level)) {
				ap_cli_error("--level must be strictly between 0 and 1, not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
			break;
		case O_SIZE:
			if (parse_size_range(optarg, &r->hv)) {
				ap_cli_error("--size wants MIN:MAX in bytes (MIN <= MAX), not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
			break;
		case VC_OPT_SKIP:
		case VC_OPT_NO_SKIP:
		case VC_OPT_FULL_NAMES:
			if (vc_view_option(c, optarg, &r->hv))
				return AP_EXIT_USAGE;
			break;
		default:
			ap_cli_error("bad option '%s' (try --help)", argv[optind - 1]);
			return AP_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		ap_cli_error("no profile given (try --help)");
		return AP_EXIT_USAGE;
	}
	if (r->memory && argc - optind != 1) {
		ap_cli_error("--memory explains one process: give one profile");
		return AP_EXIT_USAGE;
	}
	if (r->peak && (r->lifetimes || r->hv.view == HV_ALLOC)) {
		ap_cli_error("--peak shows the in-use view alone: not with --alloc "
			     "or --lifetimes");
		return AP_EXIT_USAGE;
	}
	return -1;
}

int ap_cmd_report(int argc, char **argv)
{
	report_options r;
	int rc = parse(argc, argv, &r);
	if (rc >= 0)
		return rc;
	char err[1024];
	err[0] = 0;
	if (r.lifetimes)
		rc = report_lifetimes_write((const char *const *)argv + optind,
					    (size_t)(argc - optind), &r, stdout, err,
					    sizeof err);
	else
		rc = report_write((const char *const *)argv + optind,
				  (size_t)(argc - optind), &r, stdout, err, sizeof err);
	if (rc)
		ap_cli_error("%s", err);
	return rc;
}
