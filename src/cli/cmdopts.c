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
#include "profload.h"
#include "profmerge.h"
#include "symbolize.h"

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

/* A view of profile p (symbolized when asked); errors name path. */
static int view_of(ap_profile *p, const hv_options *o, const char *path,
		   hv_view **out)
{
	char err[512];
	ap_profile *sp = NULL;
	int rc = 0;
	if (o->symbolize) {
		sym_options so;
		sym_options_default(&so);
		rc = sym_symbolize_profile(p, &so, &sp, NULL, err, sizeof err);
	}
	if (!rc)
		rc = hv_build(sp ? sp : p, o, out, err, sizeof err);
	ap_profile_destroy(sp);
	if (!rc)
		return 0;
	ap_cli_error("%s: %s", path, err);
	return rc == AP_EINVAL ? AP_EXIT_USAGE : AP_EXIT_INPUT;
}

int vc_open_pair(const char *base_path, const char *new_path,
		 const hv_options *o, hv_view **vb, hv_view **vn, bool *delta)
{
	const char *paths[2] = {base_path, new_path};
	ap_profile *pb = NULL, *pn = NULL, *pd = NULL;
	char err[512];
	*vb = *vn = NULL;
	int rc = hv_load_profiles(&paths[0], 1, &pb, err, sizeof err);
	if (!rc)
		rc = hv_load_profiles(&paths[1], 1, &pn, err, sizeof err);
	if (rc) {
		ap_cli_error("%s", err);
		rc = rc == AP_EINVAL ? AP_EXIT_USAGE : AP_EXIT_INPUT;
		goto out;
	}
	ap_process_id ib, in;
	*delta = ap_profile_get_process(pb, &ib) == 0 &&
		 ap_profile_get_process(pn, &in) == 0 && ap_process_same(&ib, &in);
	if (!*delta) {
		rc = view_of(pb, o, paths[0], vb);
		if (!rc)
			rc = view_of(pn, o, paths[1], vn);
		goto out;
	}
	if (o->view != HV_ALLOC) {
		ap_cli_error("BASE and NEW are dumps of one process (pid %lld): "
			     "their in-use samples are shared, not independent; "
			     "compare what was allocated between them with --alloc",
			     (long long)ib.pid);
		rc = AP_EXIT_USAGE;
	} else if (in.seq < ib.seq) {
		ap_cli_error("NEW (dump %llu) is an earlier dump of the process "
			     "than BASE (dump %llu): swap them",
			     (unsigned long long)in.seq, (unsigned long long)ib.seq);
		rc = AP_EXIT_USAGE;
	} else if (hv_profile_subtract(pn, pb, &pd, err, sizeof err)) {
		ap_cli_error("%s", err);
		rc = AP_EXIT_INPUT;
	} else {
		rc = view_of(pd, o, paths[1], vb);
	}
out:
	ap_profile_destroy(pb);
	ap_profile_destroy(pn);
	ap_profile_destroy(pd);
	return rc;
}

int vc_series_option(int opt, const char *arg, ts_options *o)
{
	uint64_t pid;
	switch (opt) {
	case VC_OPT_BY:
		if (!strcmp(arg, "function"))
			o->hv.by = HV_BY_FUNCTION;
		else if (!strcmp(arg, "line"))
			o->hv.by = HV_BY_LINE;
		else if (!strcmp(arg, "stack"))
			o->hv.by = HV_BY_STACK;
		else {
			ap_cli_error("--by must be function, line or stack, "
				     "not '%s'", arg);
			return AP_EXIT_USAGE;
		}
		return 0;
	case VC_OPT_PID:
		if (ap_cli_parse_u64(arg, &pid) || pid > INT64_MAX) {
			ap_cli_error("--pid needs a process id, not '%s'", arg);
			return AP_EXIT_USAGE;
		}
		o->pid = (int64_t)pid;
		return 0;
	case VC_OPT_NOSYM:
		o->hv.symbolize = false;
		return 0;
	default:
		return vc_view_option(opt, arg, &o->hv);
	}
}

int vc_open_series(const char *cmd, const char *const *paths, size_t n,
		   const ts_options *o, ts_series **out)
{
	char err[512];
	*out = NULL;
	if (n == 0) {
		ap_cli_error("no profile given (see 'allocprof %s --help')", cmd);
		return AP_EXIT_USAGE;
	}
	int rc = ts_series_load(paths, n, o, out, err, sizeof err);
	if (!rc)
		return 0;
	ap_cli_error("%s", err);
	return rc == AP_EINVAL ? AP_EXIT_USAGE : AP_EXIT_INPUT;
}
