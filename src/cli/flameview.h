/*
 * flameview.h: the flame graph of a heap view (allocprof flame): every
 * stack of the view into a flamegraph.h tree, tooltips with intervals at
 * the view's level, and with a BASE view a differential graph coloured by
 * the change as allocprof diff judges it (diffstat.h).
 */
#ifndef ALLOCPROF_CLI_FLAMEVIEW_H
#define ALLOCPROF_CLI_FLAMEVIEW_H

#include <stddef.h>
#include <stdio.h>

#include "heapview.h"

/*
 * Write the SVG flame graph of v (aggregated by stack) to out; vb is the
 * BASE of a differential graph, or NULL. title heads the graph, level sets
 * the tooltips' intervals, width the image width in px. Returns the exit
 * status: 0, or AP_EXIT_INPUT with one line in err (out of memory, a write
 * error).
 */
int flameview_write(const hv_view *v, const hv_view *vb, const char *title,
		    double level, unsigned width, FILE *out, char *err,
		    size_t errlen);

#endif
