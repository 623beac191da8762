/*
 * symmemo.h: symbolizing many profiles of one process for the cost of
 * about one. The points of a series (series.h) are profiles of the same
 * process, whose locations are the same addresses in the same mappings
 * over and over; symbolizing each from scratch opens every binary and its
 * debug information again (most of the time `leaks` took). A memo keeps
 * what each (mapping file, build ID, address) resolved to; a profile whose
 * every unsymbolized location is known is rewritten from the memo
 * (profmerge.h's rewrite hook, as the symbolizer itself does), any other
 * goes through sym_symbolize_profile and its results join the memo.
 */
#ifndef ALLOCPROF_CLI_SYMMEMO_H
#define ALLOCPROF_CLI_SYMMEMO_H

#include <stddef.h>

#include "allocprof/profile.h"
#include "symbolize.h"

typedef struct sym_memo sym_memo;

/* NULL when out of memory. */
sym_memo *sym_memo_new(void);
void sym_memo_free(sym_memo *m);

/*
 * *out = in symbolized (a new profile), from the memo when it knows every
 * location of in that needs symbolizing, else by sym_symbolize_profile
 * with o. Returns as sym_symbolize_profile.
 */
int sym_memo_symbolize(sym_memo *m, const ap_profile *in, const sym_options *o,
		       ap_profile **out, char *err, size_t errlen);

/* How many profiles needed the symbolizer (the rest came from the memo). */
size_t sym_memo_misses(const sym_memo *m);

#endif
