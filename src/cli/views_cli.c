/*
 * views_cli.c: option handling, profile opening and the folded-stack
 * writer shared by allocprof diff, flame, folded (see views_cli.h).
 */
#define _GNU_SOURCE
#include "views_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "views_util.h"

int vc_view_option(int opt, const char *arg, hv_options *o)
{
	switch (opt) {
	case VC_OPT_ALLOC: o->view = HV_ALLOC; return 0;
	case VC_OPT_INUSE: o->view = HV_INUSE; return 0;
	case VC_OPT_REQUESTED: o->value = HV_REQUESTED; return 0;
	case VC_OPT_USABLE: o->value = HV_USABLE; return 0;
	case VC_OPT_FOCUS: o->focus = arg; return 0;
	case VC_OPT_IGNORE: o->ignore = arg; return 0;
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

void vc_json_view(json_writer *w, const hv_options *o)
{
	json_key(w, "view");
	json_string(w, hv_kind_name(o->view));
	json_key(w, "value");
	json_string(w, hv_value_name(o->value));
	json_key(w, "by");
	json_string(w, hv_by_name(o->by));
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

/* ---- differences ------------------------------------------------------ */

void vc_diff_side(const hv_view *v, const hv_stat *st, double level,
		  vu_side *out)
{
	double side_level = vu_side_level(level);
	memset(out, 0, sizeof *out);
	if (!st || st->samples == 0) {
		out->bytes = st ? st->bytes : 0;
		out->exact = hv_rate(v) <= 1 && !hv_mixed_rates(v);
		out->lo = 0;
		out->hi = out->exact ? out->bytes
				     : out->bytes + vu_empty_upper(hv_rate(v),
								   side_level);
		return;
	}
	hv_stat s = *st;
	hv_stat_finish(&s, side_level);
	out->bytes = s.bytes;
	out->var_bytes = s.var_bytes;
	out->samples = s.samples;
	out->exact = s.method == HV_EXACT;
	out->lo = s.bytes_lo;
	out->hi = s.bytes_hi;
}

int vc_diff(const hv_view *vb, const hv_stat *b, const hv_view *vn,
	    const hv_stat *n, double level, vu_diff *out)
{
	vu_side sb, sn;
	vc_diff_side(vb, b, level, &sb);
	vc_diff_side(vn, n, level, &sn);
	return vu_diff_interval(&sb, &sn, level, out);
}

/* ---- folded stacks ---------------------------------------------------- */

struct folded_line {
	char *text;
	double bytes;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text,
		      ((const struct folded_line *)b)->text);
}

/* "root;...;leaf" of stack i, malloc'd. */
static char *stack_text(const hv_site *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (size_t k = s->nstack; k-- > 0;) {
		if (k + 1 != s->nstack)
			fputc(';', f);
		vu_folded_frame(f, s->stack[k].function, k + 1 == s->nstack);
	}
	if (!s->nstack)
		vu_folded_frame(f, NULL, true);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int vc_write_folded(const hv_view *v, FILE *out)
{
	size_t n = hv_nstacks(v), m = 0;
	struct folded_line *lines = calloc(n ? n : 1, sizeof *lines);
	double *w = calloc(n ? n : 1, sizeof *w);
	uint64_t *iw = calloc(n ? n : 1, sizeof *iw);
	int rc = 0;
	if (!lines || !w || !iw)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		const hv_site *s = hv_stack_at(v, i);
		lines[i].bytes = s->stat.bytes;
		if (!(lines[i].text = stack_text(s)))
			goto nomem;
	}
	qsort(lines, n, sizeof *lines, cmp_line);
	/* Merge stacks that print the same (equal names, other addresses). */
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(lines[m - 1].text, lines[i].text)) {
			lines[m - 1].bytes += lines[i].bytes;
			free(lines[i].text);
			continue;
		}
		lines[m++] = lines[i];
	}
	n = m;
	for (size_t i = 0; i < n; i++)
		w[i] = lines[i].bytes;
	vu_round_weights(w, n, iw);
	for (size_t i = 0; i < n; i++)
		if (iw[i])
			fprintf(out, "%s %llu\n", lines[i].text,
				(unsigned long long)iw[i]);
	if (ferror(out))
		rc = -1;
	goto done;
nomem:
	errno = ENOMEM;
	rc = -1;
done:
	if (lines)
		for (size_t i = 0; i < n; i++)
			free(lines[i].text);
	free(lines);
	free(w);
	free(iw);
	return rc;
}
