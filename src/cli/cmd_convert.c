/*
 * cmd_convert.c: `allocprof convert --to pprof|heap_v2|folded|json IN -o OUT`.
 *
 *   pprof    gzip'd pprof; --symbolize fills Function/Line with libdw so
 *            `go tool pprof` needs no binaries (has_* flags set); always
 *            with allocprof's drop_frames (ap_profile_drop_alloc_frames).
 *   heap_v2  jemalloc's text format for jeprof, values written through the
 *            jeprof transform so jeprof prints the unbiased numbers
 *            (include/allocprof/heapv2.h; STATISTICS.md section 3).
 *   folded   one line per stack, root-first frames joined by ';', a space and
 *            the estimated bytes as an integer (FlameGraph, speedscope).
 *   json     the whole profile as one JSON object: sample types, period,
 *            drop_frames, every sample with its symbolized stack, values
 *            and labels, comments, and the histograms (extensions or the
 *            comments of earlier versions, summarized as report --sizes).
 * Output is written atomically (a temporary file, then rename); "-o -"
 * writes to stdout. Reading is profload.h's: pprof or heap_v2 text, each
 * plain or gzip'd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/heapv2.h"
#include "cli_util.h"
#include "commands.h"
#include "folded.h"
#include "heapview.h"
#include "json.h"
#include "profload.h"
#include "report.h"

static void convert_usage(FILE *f)
{
	fputs("usage: allocprof convert --to pprof|heap_v2|folded|json [-o OUT]\n"
	      "                         [--symbolize|--no-symbolize] [--alloc|--inuse] IN\n"
	      "\n"
	      "Convert a heap profile (gzip'd pprof, or jemalloc heap_v2 text).\n"
	      "\n"
	      "  --to FORMAT      pprof (gzip'd; add --symbolize for function names,\n"
	      "                   files and lines from the binaries), heap_v2 (for\n"
	      "                   jeprof; values transformed so jeprof prints the\n"
	      "                   unbiased estimates), folded (root;...;leaf BYTES per\n"
	      "                   line, for FlameGraph/speedscope), json (every sample)\n"
	      "  -o, --output OUT output file, written atomically (default/-: stdout)\n"
	      "  --symbolize      resolve addresses with libdw (default for folded and\n"
	      "                   json; opt-in for pprof; heap_v2 keeps raw addresses)\n"
	      "  --no-symbolize   keep addresses\n"
	      "  --alloc, --inuse view for folded (default inuse)\n"
	      "\n"
	      "Exit status: 0 ok, 1 usage error, 2 unreadable or invalid input.\n",
	      f);
}

enum fmt { F_NONE, F_PPROF, F_HEAPV2, F_FOLDED, F_JSON };

/* Write buf to path ("-" = stdout) atomically; CLI exit status. */
static int emit(const char *path, const void *buf, size_t len)
{
	if (!strcmp(path, "-")) {
		if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
			ap_cli_error("writing to stdout: %s", strerror(errno));
			return AP_EXIT_INPUT;
		}
		return AP_EXIT_OK;
	}
	if (ap_file_write_atomic(path, buf, len, 0666)) {
		ap_cli_error("%s: %s", path, strerror(errno));
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}

/* The same folded lines as `allocprof folded` (folded_write: sanitised
 * frames, merged stacks, weights summing to the rounded total). */
static int to_folded(const ap_profile *p, hv_kind kind, FILE *f, char *err,
		     size_t errlen)
{
	hv_options o;
	hv_view *v;
	hv_options_default(&o);
	o.view = kind;
	o.by = HV_BY_STACK;
	int rc = hv_build(p, &o, &v, err, errlen);
	if (rc)
		return rc;
	if (folded_write(v, f)) {
		snprintf(err, errlen, "writing folded stacks: %s", strerror(errno));
		rc = AP_EIO;
	}
	hv_destroy(v);
	return rc;
}

static void json_frame(json_writer *w, const ap_profile *p,
		       const ap_location *l, const ap_line *ln)
{
	json_begin_object(w);
	json_key(w, "address");
	json_uint(w, l->address);
	const ap_mapping *m = l->mapping_id ? ap_profile_mapping(p, l->mapping_id)
					    : NULL;
	if (m) {
		json_key(w, "mapping");
		json_string(w, ap_profile_string(p, m->filename));
	}
	const ap_function *fn = ln ? ap_profile_function(p, ln->function_id) : NULL;
	if (fn) {
		json_key(w, "function");
		json_string(w, ap_profile_string(p, fn->name));
		json_key(w, "file");
		json_string(w, ap_profile_string(p, fn->filename));
		json_key(w, "line");
		json_int(w, ln->line);
		json_key(w, "inlined");
		json_bool(w, ln != &l->lines[l->nlines - 1]);
	}
	json_end_object(w);
}

static void json_sample(json_writer *w, const ap_profile *p, const ap_sample *s)
{
	json_begin_object(w);
	json_key(w, "stack");
	json_begin_array(w);
	for (size_t i = 0; i < s->nlocations; i++) {
		const ap_location *l = ap_profile_location(p, s->location_ids[i]);
		if (!l)
			continue;
		for (size_t j = 0; j < l->nlines; j++)
			json_frame(w, p, l, &l->lines[j]);
		if (!l->nlines)
			json_frame(w, p, l, NULL);
	}
	json_end_array(w);
	json_key(w, "values");
	json_begin_array(w);
	for (size_t i = 0; i < p->nsample_types; i++)
		json_int(w, s->values[i]);
	json_end_array(w);
	json_key(w, "labels");
	json_begin_object(w);
	for (size_t i = 0; i < s->nlabels; i++) {
		json_key(w, ap_profile_string(p, s->labels[i].key));
		if (s->labels[i].str)
			json_string(w, ap_profile_string(p, s->labels[i].str));
		else
			json_int(w, s->labels[i].num);
	}
	json_end_object(w);
	json_end_object(w);
}

static void to_json(const ap_profile *p, FILE *f)
{
	json_writer w;
	json_init(&w, f);
	json_begin_object(&w);
	json_key(&w, "sample_types");
	json_begin_array(&w);
	for (size_t i = 0; i < p->nsample_types; i++) {
		json_begin_object(&w);
		json_key(&w, "type");
		json_string(&w, ap_profile_string(p, p->sample_types[i].type));
		json_key(&w, "unit");
		json_string(&w, ap_profile_string(p, p->sample_types[i].unit));
		json_end_object(&w);
	}
	json_end_array(&w);
	json_key(&w, "period_type");
	json_string(&w, ap_profile_string(p, p->period_type.type));
	json_key(&w, "period");
	json_int(&w, p->period);
	json_key(&w, "time_nanos");
	json_int(&w, p->time_nanos);
	json_key(&w, "duration_nanos");
	json_int(&w, p->duration_nanos);
	json_key(&w, "drop_frames");
	json_string(&w, ap_profile_string(p, p->drop_frames));
	json_key(&w, "samples");
	json_begin_array(&w);
	for (size_t i = 0; i < p->nsamples; i++)
		json_sample(&w, p, &p->samples[i]);
	json_end_array(&w);
	json_key(&w, "comments");
	json_begin_array(&w);
	for (size_t i = 0; i < p->ncomments; i++)
		json_string(&w, ap_profile_string(p, p->comments[i]));
	json_end_array(&w);
	json_key(&w, "histograms");
	json_begin_object(&w);
	report_json_hists(&w, p);
	json_end_object(&w);
	json_end_object(&w);
	fputc('\n', f);
}

/* Render p in fmt into a malloc'd buffer; 0 or an AP_E* code (err set). */
static int render(const ap_profile *p, enum fmt fmt, hv_kind kind,
		  char **buf, size_t *len, char *err, size_t errlen)
{
	int rc = 0;
	if (fmt == F_PPROF) {
		rc = ap_pprof_encode(p, true, NULL, (unsigned char **)buf, len);
		if (rc)
			snprintf(err, errlen, "cannot encode pprof: %s", ap_strerror(rc));
		return rc;
	}
	if (fmt == F_HEAPV2) {
		rc = ap_heapv2_encode(p, NULL, NULL, buf, len);
		if (rc)
			snprintf(err, errlen, "cannot write heap_v2: %s%s",
				 ap_strerror(rc),
				 p->period > 0 ? "" : " (the profile has no period)");
		return rc;
	}
	FILE *f = open_memstream(buf, len);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return AP_ENOMEM;
	}
	if (fmt == F_FOLDED)
		rc = to_folded(p, kind, f, err, errlen);
	else
		to_json(p, f);
	if (fclose(f) && !rc) {
		snprintf(err, errlen, "out of memory");
		rc = AP_ENOMEM;
	}
	if (rc) {
		free(*buf);
		*buf = NULL;
	}
	return rc;
}

int ap_cmd_convert(int argc, char **argv)
{
	enum { O_SYM = 256, O_NOSYM, O_ALLOC, O_INUSE };
	static const struct option opts[] = {
		{"to", required_argument, NULL, 't'},
		{"output", required_argument, NULL, 'o'},
		{"symbolize", no_argument, NULL, O_SYM},
		{"no-symbolize", no_argument, NULL, O_NOSYM},
		{"alloc", no_argument, NULL, O_ALLOC},
		{"inuse", no_argument, NULL, O_INUSE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	enum fmt fmt = F_NONE;
	const char *out = "-";
	int sym = -1, c;
	hv_kind kind = HV_INUSE;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "t:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			fmt = !strcmp(optarg, "pprof")     ? F_PPROF
			      : !strcmp(optarg, "heap_v2") ? F_HEAPV2
			      : !strcmp(optarg, "folded")  ? F_FOLDED
			      : !strcmp(optarg, "json")    ? F_JSON
							   : F_NONE;
			if (fmt == F_NONE) {
				ap_cli_error("--to must be pprof, heap_v2, folded or json, not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
			break;
		case 'o': out = optarg; break;
		case O_SYM: sym = 1; break;
		case O_NOSYM: sym = 0; break;
		case O_ALLOC: kind = HV_ALLOC; break;
		case O_INUSE: kind = HV_INUSE; break;
		case 'h': convert_usage(stdout); return AP_EXIT_OK;
		default:
			ap_cli_error("bad option '%s' (try --help)", argv[optind - 1]);
			return AP_EXIT_USAGE;
		}
	}
	if (fmt == F_NONE || optind + 1 != argc) {
		ap_cli_error(fmt == F_NONE ? "missing --to FORMAT (try --help)"
					   : "convert takes exactly one input profile");
		return AP_EXIT_USAGE;
	}
	if (sym < 0)
		sym = fmt == F_FOLDED || fmt == F_JSON;
	if (sym && fmt == F_HEAPV2) {
		ap_cli_error("heap_v2 holds raw addresses only; --symbolize does not apply");
		return AP_EXIT_USAGE;
	}
	char err[1024];
	ap_profile *p;
	const char *in[1] = {argv[optind]};
	if (hv_load_symbolized(in, 1, sym, &p, err, sizeof err)) {
		ap_cli_error("%s", err);
		return AP_EXIT_INPUT;
	}
	char *buf = NULL;
	size_t len = 0;
	/* pprof: the bytes on the caller of malloc (a heap_v2 input has no
	 * drop_frames of its own). */
	int rc = fmt == F_PPROF ? ap_profile_drop_alloc_frames(p) : 0;
	if (rc)
		snprintf(err, sizeof err, "%s", ap_strerror(rc));
	else
		rc = render(p, fmt, kind, &buf, &len, err, sizeof err);
	ap_profile_destroy(p);
	if (rc) {
		ap_cli_error("%s: %s", in[0], err);
		return AP_EXIT_INPUT;
	}
	rc = emit(out, buf, len);
	free(buf);
	return rc;
}
