/*
 * report_time.h: `allocprof report --lifetimes`: per site the weighted
 * Kaplan-Meier median and quartiles of the lifetimes with intervals, and
 * the "most temporary allocations" table (short-lived bytes per second),
 * as text or one JSON object (docs/REPORTS.md, docs/TIME.md).
 */
#ifndef ALLOCPROF_CLI_REPORT_TIME_H
#define ALLOCPROF_CLI_REPORT_TIME_H

#include <stdio.h>

#include "report.h"

/* As report_write, for --lifetimes (r->short_ns the short-lived limit). */
int report_lifetimes_write(const char *const *paths, size_t n,
			   const report_options *r, FILE *out, char *err,
			   size_t errlen);

#endif
