/*
 * cmd_folded.c: allocprof folded: a profile as folded stacks, the text
 * format FlameGraph, speedscope and inferno read (docs/FORMATS.md): one line per
 * unique stack, frames root first joined by ';', a space and an integer
 * weight, here the estimated bytes of the view. The writer is
 * folded_write (folded.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "cmdopts.h"
#include "folded.h"
#include "heapview.h"

static const char folded_usage[] =
	"usage: allocprof folded [--alloc|--inuse] [--requested|--usable]\n"
	"                        [--focus REGEX] [--ignore REGEX] [--skip REGEX]\n"
	"                        [--no-skip] [--full-names] PROFILE...\n"
	"\n"
	"Print the profile as folded stacks: one line per unique stack, frames\n"
	"root first joined by ';', then a space and the estimated bytes of the\n"
	"view as an integer (e.g. 'main;parse;xstrdup 1048576'). Feed it to\n"
	"flamegraph.pl, inferno-flamegraph or speedscope. Several profiles are\n"
	"merged first. Weights are unbiased estimates rounded so they sum to\n"
	"the view's rounded total; stacks estimated at 0 bytes are left out.\n"
	"Characters that would break the format are replaced: ';' in a name\n"
	"becomes ':', control characters '?', an empty name '[unknown]'.\n"
	"\n"
	"  --inuse       bytes still allocated when the profile was written\n"
	"                (default)\n"
	"  --alloc       all bytes allocated over the run\n"
	"  --requested   sizes as requested by the program (default)\n"
	"  --usable      usable sizes reported by the allocator\n"
	"  --focus RE    keep stacks with a function matching RE (POSIX ERE)\n"
	"  --ignore RE   drop stacks with a function matching RE\n"
	"  --level L     accepted for symmetry with the other views; unused\n"
	"  --help        this text\n"
	VC_FRAME_HELP
	"\n"
	"Exit status: 0 ok, 1 usage error, 2 unreadable or malformed profile.\n";

int ap_cmd_folded(int argc, char **argv)
{
	static const struct option longopts[] = {VC_VIEW_LONGOPTS,
						 {NULL, 0, NULL, 0}};
	hv_options o;
	hv_options_default(&o);
	o.by = HV_BY_STACK;
	opterr = 0;
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h' || c == VC_OPT_HELP) {
			fputs(folded_usage, stdout);
			return AP_EXIT_OK;
		}
		int rc = vc_view_option(c, optarg, &o);
		if (rc < 0)
			return vc_bad_option("folded", argv);
		if (rc)
			return rc;
	}
	if (optind >= argc) {
		ap_cli_error("no profile given (see 'allocprof folded --help')");
		return AP_EXIT_USAGE;
	}
	hv_view *v;
	int rc = vc_open((const char *const *)argv + optind,
			 (size_t)(argc - optind), &o, &v);
	if (rc)
		return rc;
	if (folded_write(v, stdout) || fflush(stdout)) {
		ap_cli_error("writing the folded stacks failed: %s",
			     strerror(errno));
		rc = AP_EXIT_INPUT;
	}
	hv_destroy(v);
	return rc;
}
