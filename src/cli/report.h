/*
 * report.h: the report engine: the top allocation sites of heap profiles
 * as a table or one JSON object (docs/REPORTS.md), with the size and
 * lifetime distributions stored as histogram comments. `allocprof report`
 * parses its options into a report_options and calls report_write;
 * `allocprof run` calls it directly for its summary.
 */
#ifndef ALLOCPROF_CLI_REPORT_H
#define ALLOCPROF_CLI_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heapview.h"
#include "json.h"

typedef struct report_options {
	hv_options hv;   /* view, filters, level, symbolize */
	uint64_t top;    /* sites shown; 0 = all */
	bool json;       /* one JSON object instead of the table */
	bool sizes;      /* add the size and lifetime distributions */
	bool memory;     /* add the memory waterfall (memview.h) */
	bool peak;       /* the heap at the in-use peak ("peak" extension) */
	bool lifetimes;  /* report_time.h: lifetimes per site */
	double short_ns; /* --lifetimes: "short-lived" limit (default 1 ms) */
} report_options;

/* Defaults: hv_options_default, top 20, table, no distributions. */
void report_options_default(report_options *r);

/*
 * Load paths[0..n-1] (profload.h), build the view and write the report to
 * out. Returns the exit status: 0; AP_EXIT_USAGE for bad options (a regex
 * that does not compile); AP_EXIT_INPUT for unreadable or invalid profiles
 * or a write error. On failure err holds one line saying why.
 */
int report_write(const char *const *paths, size_t n, const report_options *r,
		 FILE *out, char *err, size_t errlen);

/* The keys "view", "value" and "by" of o, as report and diff begin their
 * JSON objects. */
void report_json_view(json_writer *w, const hv_options *o);

/* Each histogram of p (ap_profile_hist_next: extensions and old
 * comments) as a key of the JSON object being written: count, min, max
 * and quantiles, as report --sizes --json. The number written. */
size_t report_json_hists(json_writer *w, const ap_profile *p);

#endif
