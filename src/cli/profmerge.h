/*
 * profmerge.h: merging heap profiles (unbias-then-sum) and the histogram
 * comments they carry. The engine behind `allocprof merge`, behind loading
 * several profiles for report, diff, flame and folded, and (through the
 * rewrite hooks) behind the symbolizer, which copies a profile while it
 * fills in functions and lines.
 */
#ifndef ALLOCPROF_CLI_PROFMERGE_H
#define ALLOCPROF_CLI_PROFMERGE_H

#include <stddef.h>
#include <stdint.h>

#include "allocprof/profile.h"

/*
 * Merge profiles with the same sample types (name and unit, any order in
 * the first is the output's): mappings, functions and locations are copied
 * (identical ones shared), identical samples (same stack and labels) have
 * their values added. The output period is the first profile's; samples
 * drawn at another rate get a "rate" label (existing labels kept), so every
 * sample keeps its own weight and intervals stay valid. Comments are kept
 * once each; histogram comments of the same NAME are added. AP_EINVAL
 * (with reason) when sample types differ.
 */
int hv_profile_merge(ap_profile *const *in, size_t n, ap_profile **out,
		     char *err, size_t errlen);

/*
 * hv_profile_merge with a rewrite of locations and mappings on the way (the
 * symbolizer uses it to fill in Function/Line): location() may set *lines to
 * n frames (innermost first) replacing l's lines, or leave *lines NULL to
 * keep them; the strings must live until the next call. mapping() may
 * change the copy's has_* flags. Either may be NULL.
 */
typedef struct hv_sym_line {
	const char *name, *system_name, *file;
	int64_t line, column;
} hv_sym_line;
typedef struct hv_rewrite {
	int (*location)(void *ctx, const ap_profile *in, const ap_location *l,
			const hv_sym_line **lines, size_t *n);
	void (*mapping)(void *ctx, const ap_profile *in, ap_mapping *copy);
	void *ctx;
} hv_rewrite;
int hv_profile_merge_ex(ap_profile *const *in, size_t n, const hv_rewrite *rw,
			ap_profile **out, char *err, size_t errlen);

/*
 * nw - base, line by line (the values of base's lines subtracted from the
 * same lines of nw): the exact delta between two cumulative dumps of one
 * process, whose shared samples cancel (the runtime rounds a line's
 * column with the same coin in every dump, so the alloc values only grow).
 * Same errors as hv_profile_merge.
 */
int hv_profile_subtract(ap_profile *nw, ap_profile *base, ap_profile **out,
			char *err, size_t errlen);

#endif
