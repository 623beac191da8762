/*
 * timeline.h: the heap of one process over time drawn from a series
 * (series.h): the top sites' live bytes as stacked areas (the rest summed
 * as "other"), the interval band of the total, the peak marked and the
 * sites `allocprof leaks` flags (leakview.h) marked. Written as an
 * interactive SVG (timeline_svg.c, with timeline.js: hovering shows the
 * time, the site under the pointer, its estimate and interval, and the
 * total's), as JSON or as a text table.
 */
#ifndef ALLOCPROF_CLI_TIMELINE_H
#define ALLOCPROF_CLI_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "leakview.h"
#include "series.h"

/* The sites drawn: leaks first, then by their largest live bytes. */
typedef struct tl_sel {
	size_t *site;     /* series site indices, bottom of the stack first */
	size_t n;
	size_t nrest;     /* sites summed into "other" */
	bool unlisted;    /* "other" also holds sites a ring point did not
			     list (its total less its listed sites) */
	ts_cell *other;   /* per point: the rest (interval: normal, from the
			     summed variances) */
} tl_sel;

/* Choose at most top sites (top 0: all). 0 or AP_ENOMEM. */
int tl_select(const ts_series *s, const lk_result *lk, uint64_t top,
	      tl_sel *out);
void tl_sel_free(tl_sel *sel);

/* Whether "other" is drawn: sites left out, or sites the ring left out. */
static inline bool tl_has_other(const tl_sel *sel)
{
	return sel->nrest > 0 || sel->unlisted;
}

/* What "other" holds, into buf: "3 more sites", "3 more sites and those
 * the ring did not list", "the sites the ring did not list"; terse (for
 * the SVG legend): "3 sites", "3 sites + unlisted", "sites the ring did not list". */
const char *tl_other_what(const tl_sel *sel, bool terse, char *buf, size_t n);

typedef struct tl_options {
	const char *title; /* NULL: "Live heap over time" */
	unsigned width;    /* px; 0 = 1200 */
	unsigned height;   /* px; 0 = 640 */
} tl_options;

/* Each writer returns 0, or -1 on a write error (or out of memory). */
int tl_write_svg(const ts_series *s, const lk_result *lk, const tl_sel *sel,
		 const tl_options *o, FILE *out);
int tl_write_json(const ts_series *s, const lk_result *lk, const tl_sel *sel,
		  FILE *out);
int tl_write_text(const ts_series *s, const lk_result *lk, const tl_sel *sel,
		  FILE *out);

/* The leak row of series site j, or NULL (for labels). */
const lk_row *tl_leak_row(const lk_result *lk, size_t j);

#endif
