/*
 * cmdopts.c: option handling and profile opening shared by allocprof diff,
 * flame and folded (see cmdopts.h).
 */
#define _GNU_SOURCE
#include "cmdopts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

int vc_view_option(int opt, const char *arg, hv_options *o)
{
	switch (opt) {
	case VC_OPT_ALLOC: o->view = HV_ALLOC; return 0;
	case VC_OPT_INUSE: o->view = HV_INUSE; return 0;
	case VC_OPT_REQUESTED: o->value = HV_REQUESTED; return 0;
	case VC_OPT_USABLE: o->value = HV_USABLE; return 0;
	case VC_OPT_FOCUS: o->focus = arg; return 0;
	case VC_OPT_IGNORE: o->ignore = arg; return 0;
	case VC_OPT_NO_SKIP: o->keep_alloc_frames = true; return 0;
	case VC_OPT_FULL_NAMES: o->full_names = true; return 0;
	case VC_OPT_SKIP:
		if (o->nskip == HV_MAX_SKIP) {
			ap_cli_error("at most %d --skip options", HV_MAX_SKIP);
			return AP_EXIT_USAGE;
		}
		o->skip[o->nskip++] = arg;
		return 0;
	case VC_OPT_LEVEL:
		if (ap_cli_parse_level(arg, &o->level)) {
			ap_cli_error("--level wants a number strictly between 0 "
				     "and 1, not '%s'", arg);
			return AP_EXIT_USAGE;
		}
		return 0;
	default: return -1;
	}
}

int vc_bad_option(const char *cmd, char **argv)
{
	ap_cli_error("unknown option or missing argument '%s' (see "
		     "'allocprof %s --help')", argv[optind - 1], cmd);
	return AP_EXIT_USAGE;
}

int vc_open(const char *const *paths, size_t n, const hv_options *o,
	    hv_view **out)
{
	char err[512];
	int rc = hv_open(paths, n, o, out, err, sizeof err);
	if (!rc)
		return 0;
	ap_cli_error("%s", err);
	return rc == AP_EINVAL ? AP_EXIT_USAGE : AP_EXIT_INPUT;
}
