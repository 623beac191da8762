/*
 * series.h: the heap of one process over time, for `allocprof leaks` and
 * `allocprof timeline` (docs/TIME.md). A series is an ordered list of
 * points; each point holds, per site, the estimated live bytes and objects
 * with their variances (Horvitz-Thompson, as the in-use view of a report)
 * and the process total with its interval.
 *
 * Sites are keyed exactly as `report --by function|line|stack` keys them:
 * each point's heap goes through heapview.h (allocator, allocprof and C++
 * runtime frames skipped, C++ names shortened, --skip), so a site of the
 * series is a row of the report of that point.
 *
 * Sources:
 *  - interval dumps of a process (ts_series_load): every dump is the
 *    process's live heap at its time; files, or directories of files, are
 *    grouped by the process identity each dump carries
 *    (ap_profile_get_process), one process per series;
 *  - any other source of live-heap snapshots of one process (the runtime's
 *    timeline ring) fills a series through ONE function,
 *    ts_series_add_profile: create the series with ts_series_new, then
 *    add each snapshot as a heap profile, in time order.
 *
 * Memory: per point only the sites with something live are kept (sparse),
 * so a series costs O(points x live sites), not O(points x all sites).
 * Strings returned live until ts_series_free.
 */
#ifndef ALLOCPROF_CLI_SERIES_H
#define ALLOCPROF_CLI_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocprof/profile.h"
#include "heapview.h"
#include "json.h"

/* Live bytes and objects of a site (or of the process) at one point. */
typedef struct ts_value {
	double bytes, var_bytes;     /* HT estimate and variance estimate */
	double objects, var_objects;
} ts_value;

/* A site's value at a point with the interval of its bytes (the report's
 * interval rule, at the series' level); all zero when nothing was live. */
typedef struct ts_cell {
	ts_value v;
	double lo, hi;
} ts_cell;

typedef struct ts_point {
	double t_s;       /* seconds since the process started */
	uint64_t seq;     /* the dump's sequence number; 0 when not a dump */
	const char *source; /* the file it came from; "" when none */
	ts_cell total;    /* every site together */
	bool partial;     /* lists only the largest sites (the runtime's
			     timeline ring keeps 16 per point, the rest as
			     one "other" sum inside total): a site absent
			     here is unknown, not zero (ts_cell_known) */
} ts_point;

typedef struct ts_site {
	const char *name;     /* the key: "fn", "fn file:line" or "root;...;leaf" */
	const char *function; /* its first frame's function */
	double max_bytes;     /* largest estimate over the points */
} ts_site;

typedef struct ts_options {
	hv_options hv; /* by, level, skip, full_names, symbolize, focus...;
			  the view is always in-use, requested bytes */
	int64_t pid;   /* ts_series_load: keep this process; -1 = the only one */
} ts_options;

/* hv_options_default (by function, level 0.95), pid -1. */
void ts_options_default(ts_options *o);

typedef struct ts_series ts_series;

/*
 * An empty series of the process id (NULL: unknown) with options o
 * (copied; the strings it points to must outlive the series). 0 or
 * AP_ENOMEM.
 */
int ts_series_new(const ts_options *o, const ap_process_id *id,
		  ts_series **out);
void ts_series_free(ts_series *s);

/*
 * THE ENTRY POINT FOR EVERY SOURCE: append one point. p is the process's
 * live heap t_s seconds after it started, as a heap profile: the in-use
 * sample types of ap_profile_init_heap (for the runtime's timeline ring:
 * one profile per point, each site's in-use sums encoded with
 * ap_heap_sums_encode and its stack as the sample's locations, with the
 * process's mappings so that it symbolizes). p is symbolized when the
 * options say so (mappings already marked has_functions are left as
 * they are), keyed by site as the report keys it, and not kept. seq is
 * the dump's sequence number (0: not a dump); source names where the
 * point came from (copied; NULL = ""). t_s must be finite and greater
 * than the last point's. 0; AP_EINVAL (bad t_s, a profile without the
 * in-use types, a bad option such as a regex) or AP_ENOMEM, with one
 * line in err.
 */
int ts_series_add_profile(ts_series *s, const ap_profile *p, double t_s,
			  uint64_t seq, const char *source, char *err,
			  size_t errlen);

/*
 * The series of interval dumps in paths[0..n-1]: files, or directories
 * whose regular files are read (names starting with '.' and the runtime's
 * temporary files "*.tmp.*" left out; a file there that is not a heap
 * profile is skipped and counted in a note on stderr). Dumps are grouped
 * by process; with several processes o->pid chooses one (an error naming
 * them otherwise). Profiles without a process identity form one series
 * only when no file has one (their times from time_nanos).
 * When the latest dump of the process carries the runtime's "timeline"
 * extension (timeline=) with at least two points, its ring is the series
 * instead (denser than the dumps; one line on stderr says so): each ring
 * point becomes a partial point (ts_point.partial) at its time since the
 * start, its listed sites keyed as the report keys them, its total the
 * ring's total (listed sites and "other"; with a filter, which cannot
 * see into "other", its listed sites that pass). Points are
 * ordered by sequence number and must have increasing times; a dump given
 * twice (same sequence and time) counts once. 0, or with one line in
 * err: AP_EINVAL for what the user must change (no profile, several
 * processes without a pid, a pid not present, a bad regex), AP_EIO,
 * AP_ECORRUPT for unreadable or invalid files, a single point or times
 * not increasing, AP_ENOMEM.
 */
int ts_series_load(const char *const *paths, size_t n, const ts_options *o,
		   ts_series **out, char *err, size_t errlen);

size_t ts_npoints(const ts_series *s);
const ts_point *ts_point_at(const ts_series *s, size_t i);
size_t ts_nsites(const ts_series *s);
const ts_site *ts_site_at(const ts_series *s, size_t j);
/* Site j's cell at point i (zeros when nothing was live there). */
ts_cell ts_cell_at(const ts_series *s, size_t i, size_t j);
/* Whether site j's value at point i is known: false only when point i
 * is partial and does not list site j (ts_cell_at then gives zeros, which
 * a trend must not take for zero bytes). */
bool ts_cell_known(const ts_series *s, size_t i, size_t j);
/* The process the series is of; NULL when unknown. */
const ap_process_id *ts_process(const ts_series *s);
const ts_options *ts_series_options(const ts_series *s);
/* The index of the point with the largest total estimate (the first of
 * equal ones); 0 for an empty series. */
size_t ts_peak(const ts_series *s);

/* "pid 1234: 21 dumps over 20.0 s" (the head line of the outputs). */
void ts_describe(const ts_series *s, char *buf, size_t n);
/* Start a JSON output on out: open its object and write the keys
 * "process" ({pid, start_ns, boot_id} or null), "view", "by", "level" and
 * "points" (the count). */
void ts_json_begin(json_writer *w, FILE *out, const ts_series *s);

#endif
