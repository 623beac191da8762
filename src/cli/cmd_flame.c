/*
 * cmd_flame.c: allocprof flame: an interactive SVG flame graph of a heap
 * profile. This file reads the options and opens the profiles; flameview.h
 * turns the views into the graph (plain, or differential with --base).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "cmdopts.h"
#include "commands.h"
#include "flameview.h"
#include "heapview.h"

static const char flame_usage[] =
	"usage: allocprof flame [--alloc|--inuse] [--requested|--usable]\n"
	"                       [--title TEXT] [--level L] [--width PX]\n"
	"                       [--base BASE]\n"
	"                       [--focus REGEX] [--ignore REGEX] [--skip REGEX]\n"
	"                       [--no-skip] [--full-names] PROFILE...\n"
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
	"                decides); tooltips add the change and its interval.\n"
	"                BASE and PROFILE two dumps of one process (--alloc):\n"
	"                a plain graph of what was allocated in between\n"
	"  --level L     confidence level of the tooltips' intervals, in (0,1)\n"
	"                (default 0.95)\n"
	"  --width PX    image width in pixels, 200..100000 (default 1200)\n"
	"  --focus RE    keep stacks with a function matching RE (POSIX ERE)\n"
	"  --ignore RE   drop stacks with a function matching RE\n"
	"  --help        this text\n"
	VC_FRAME_HELP
	"\n"
	"Exit status: 0 ok, 1 usage error, 2 unreadable or malformed profile.\n";

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
	hv_view *v = NULL, *vb = NULL;
	bool delta = false;
	if (base && argc - optind == 1) {
		/* two dumps of one process: a plain graph of their exact
		 * delta, what was allocated in between (cmdopts.h) */
		if ((rc = vc_open_pair(base, argv[optind], &o, &vb, &v, &delta)))
			return rc;
		if (delta) {
			v = vb;
			vb = NULL;
		}
	} else {
		if ((rc = vc_open((const char *const *)argv + optind,
				  (size_t)(argc - optind), &o, &v)))
			return rc;
		if (base && (rc = vc_open(&base, 1, &o, &vb))) {
			hv_destroy(v);
			return rc;
		}
	}
	char deftitle[256];
	if (!title) {
		int more = argc - optind - 1;
		char extra[32] = "";
		if (more > 0)
			snprintf(extra, sizeof extra, " and %d more", more);
		snprintf(deftitle, sizeof deftitle, "%s: %s%s%s%s",
			 delta ? "Allocated between dumps"
			 : o.view == HV_ALLOC ? "Allocated bytes" : "In-use bytes",
			 argv[optind], extra, base ? (delta ? " since " : " vs ") : "",
			 base ? base : "");
		title = deftitle;
	}
	char err[128];
	rc = flameview_write(v, vb, title, o.level, (unsigned)width, stdout,
			     err, sizeof err);
	if (rc)
		ap_cli_error("%s", err);
	hv_destroy(v);
	hv_destroy(vb);
	return rc;
}
