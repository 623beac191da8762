/*
 * memview.h: `allocprof report --memory`, the waterfall from the sampled
 * live heap to resident memory (docs/MEMORY.md), from the process-memory
 * record a dump carries (allocprof/memory.h).
 */
#ifndef ALLOCPROF_CLI_MEMVIEW_H
#define ALLOCPROF_CLI_MEMVIEW_H

#include <stdbool.h>
#include <stdio.h>

#include "allocprof/memory.h"
#include "allocprof/profile.h"
#include "heapview.h"
#include "json.h"

/* What the waterfall shows: the record, the trigger, the in-use total. */
typedef struct memview {
	ap_memory mem;
	char trigger[64];
	hv_stat heap;
	double level;
} memview;

/*
 * Fill mv from p: the record (memview_find) and the in-use total of p
 * under the options o (view forced to in-use). 0, or the exit status
 * (AP_EXIT_INPUT: no record, a corrupt one) with one line in err.
 */
int memview_prepare(const ap_profile *p, const hv_options *o, memview *mv,
		    char *err, size_t errlen);

/*
 * Find the record in p: 0, AP_ENOTFOUND (the profile has none: a profile
 * not written by the runtime, or an older one) or AP_ECORRUPT. The last
 * record wins when a merge left several. *trigger gets the trigger
 * extension's text ("" when none; NUL-terminated, cap bytes).
 */
int memview_find(const ap_profile *p, ap_memory *m, char *trigger, size_t cap);

/* The waterfall as text; heap is the in-use total of the profile (with
 * its interval at level). */
void memview_print(FILE *out, const ap_memory *m, const char *trigger,
		   const hv_stat *heap, double level);
/* The same as the value of a "memory" key (an object; unknowns null). */
void memview_json(json_writer *w, const ap_memory *m, const char *trigger,
		  const hv_stat *heap);

#endif
