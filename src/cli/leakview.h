/*
 * leakview.h: leak verdicts over a series (series.h), for `allocprof
 * leaks` and the leak marks of `allocprof timeline`. Each site's live
 * bytes over the points go through the library's trend test
 * (allocprof/leak.h: growth rate over the later half of the series with a
 * random-walk interval, one-sided p-value), then Benjamini-Hochberg across
 * all the sites of the series; a site is a leak when its q-value is at
 * most the FDR level. docs/TIME.md explains the model and its limits.
 */
#ifndef ALLOCPROF_CLI_LEAKVIEW_H
#define ALLOCPROF_CLI_LEAKVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocprof/leak.h"
#include "series.h"

typedef struct lk_row {
	size_t site;       /* index in the series (ts_site_at) */
	ap_leak_result r;  /* rate, interval (bytes/s), p, q, leak */
	double last_bytes; /* live bytes at the last point where known */
} lk_row;

typedef struct lk_result {
	lk_row *rows;  /* every site: leaks first (fastest first), then by
			  q-value, then by live bytes at the end */
	size_t n;
	bool *is_leak; /* per series site index */
	size_t nleaks;
	ap_leak_result total; /* the process total's trend (not in the FDR) */
	double fdr, level;
	double t_from; /* start of the later half the trends are fitted on */
} lk_result;

/*
 * Verdicts for every site of s (at least two points) at the series'
 * level, Benjamini-Hochberg at fdr in (0, 1). 0, or AP_EINVAL/AP_ENOMEM
 * with one line in err.
 */
int lk_analyse(const ts_series *s, double fdr, lk_result *out, char *err,
	       size_t errlen);
void lk_free(lk_result *r);

/*
 * A growth rate in bytes per second for people: per hour, the interval in
 * the same unit, "+38.0 MiB/h [29.1, 47.2]"; "n/a" when rate is NaN.
 */
void lk_format_rate(double rate, double lo, double hi, char *buf, size_t n);

/* The table (top 0 = every site) and the JSON object of docs/TIME.md.
 * 0, or -1 on a write error. */
int lk_write_text(const ts_series *s, const lk_result *r, uint64_t top,
		  FILE *out);
int lk_write_json(const ts_series *s, const lk_result *r, uint64_t top,
		  FILE *out);

#endif
