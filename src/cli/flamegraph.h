/*
 * flamegraph.h: build a tree of call stacks and write it as a self-contained,
 * interactive SVG flame graph (allocprof flame).
 *
 * The caller adds stacks root-first with their additive statistics (estimated
 * bytes and what an interval needs); the tree sums them per frame. Writing
 * lays frames out with the root at the bottom and widths proportional to
 * estimated bytes, and embeds a small script (our own) for click-to-zoom,
 * regex search (Ctrl-F or "/") with the matched share, and a details line.
 * Each frame's tooltip (an SVG <title>) gives its function, bytes, the
 * interval the caller's callback computes, and the sample count. Every name
 * is XML-escaped and made valid UTF-8, so hostile symbol names cannot break
 * the document.
 */
#ifndef ALLOCPROF_CLI_FLAMEGRAPH_H
#define ALLOCPROF_CLI_FLAMEGRAPH_H

#include <stddef.h>
#include <stdio.h>

/*
 * Interval callback: fill *lo and *hi for a frame from its summed payload
 * (see ap_fg_create) at the graph's level. Return 0, or nonzero when no
 * interval can be given (the tooltip then omits it).
 */
typedef int (*ap_fg_interval_fn)(void *ctx, const void *payload, double *lo,
				 double *hi);
/*
 * Optional per-frame hooks on the payload, called once per drawn frame with
 * the options' ctx. colour: write a fill such as "rgb(200,40,40)" into buf
 * and return 0, or nonzero for the default colour (by name). note: write
 * plain text for extra tooltip lines into buf ('\n' between lines; the
 * writer escapes it) and return 0, or nonzero for none.
 */
typedef int (*ap_fg_colour_fn)(void *ctx, const void *payload, char *buf,
			       size_t n);
typedef int (*ap_fg_note_fn)(void *ctx, const void *payload, char *buf,
			     size_t n);
/* Payload accumulation: *into += *from. */
typedef void (*ap_fg_add_fn)(void *into, const void *from);

typedef struct ap_fg_options {
	const char *title;      /* NULL = "Flame graph" */
	const char *subtitle;   /* NULL = none; e.g. "alloc view, rate 524288" */
	const char *unit_label; /* word after an amount: "allocated", "in use" */
	double level;           /* confidence level shown in tooltips */
	ap_fg_interval_fn interval; /* NULL = no intervals in tooltips */
	ap_fg_colour_fn colour;     /* NULL = colours by name */
	ap_fg_note_fn note;         /* NULL = no extra tooltip lines */
	void *ctx;                  /* passed to interval, colour and note */
	unsigned width;     /* image width in px; 0 = 1200 */
	double min_width;   /* frames narrower than this many px are omitted;
			       0 = 0.1 px, negative = draw every frame */
} ap_fg_options;

typedef struct ap_fg ap_fg;

/*
 * A new, empty graph. Each frame carries, besides its bytes and sample
 * count, a payload of payload_size bytes (zero-initialised, summed with
 * add) from which the interval callback computes the tooltip's interval;
 * payload_size 0 (add NULL) means none. NULL when out of memory.
 */
ap_fg *ap_fg_create(size_t payload_size, ap_fg_add_fn add);
void ap_fg_destroy(ap_fg *g);

/* The fill colour of a frame: a warm rgb() chosen by the name alone, so the
 * same function has the same colour in every graph. */
void ap_fg_name_colour(const char *name, char *buf, size_t n);

/*
 * Add one stack: nframes names, root first (frames[0] is the outermost
 * caller), its estimated bytes (sets the widths), its sample count and
 * payload (NULL when the graph has none). Names are copied; NULL or ""
 * becomes "[unknown]"; nframes 0 adds to the root only. 0, or -1 with errno
 * EINVAL (bytes or samples negative, NaN or infinite) or ENOMEM.
 */
int ap_fg_add(ap_fg *g, const char *const *frames, size_t nframes,
	      double bytes, double samples, const void *payload);

/* The root's summed bytes (all stacks). */
double ap_fg_total(const ap_fg *g);
/* Number of frames in the tree, the root included. */
size_t ap_fg_nframes(const ap_fg *g);

/* Write the SVG document to out. 0, or -1 on a write error (errno kept). */
int ap_fg_write_svg(const ap_fg *g, const ap_fg_options *opt, FILE *out);

#endif
