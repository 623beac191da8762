/*
 * allocprof/sample_table.h: per-size-class sampling rates, the table that
 * `allocprof tune` writes and the runtime loads with sample_table=FILE
 * (format: docs/FORMATS.md "Sample tables"; statistics: docs/STATISTICS.md
 * section 10).
 *
 * A table has a base rate R (the sampler's own: what the fast path
 * counts) and classes, each the sizes from its min_size up to the next
 * class's min_size - 1 (the last one: every larger size), with a rate
 * R_c >= R. ap_sampler_sample_at(s, size, ap_sample_table_rate(t, size))
 * then samples each allocation exactly as per-byte sampling at its class
 * rate. Sizes below the first class use the base rate.
 *
 * The table is a fixed-size value (no allocation anywhere: the runtime
 * parses it before its own allocator is ready).
 */
#ifndef ALLOCPROF_SAMPLE_TABLE_H
#define ALLOCPROF_SAMPLE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The format version this library reads and writes. */
#define AP_SAMPLE_TABLE_VERSION 1
/* The first line of every table (followed by a space and the version). */
#define AP_SAMPLE_TABLE_MAGIC "allocprof-sample-table"
/* Most classes in one table (sizes 1 B to 2^63 at 16 classes per doubling
 * take under 1000). */
#define AP_SAMPLE_TABLE_MAX 1024

typedef struct ap_sample_table {
	uint64_t base;                         /* R, in [1, 2^52] */
	size_t n;                              /* classes */
	uint64_t min_size[AP_SAMPLE_TABLE_MAX]; /* strictly increasing, >= 1 */
	uint64_t rate[AP_SAMPLE_TABLE_MAX];     /* R_c in [base, 2^52] */
} ap_sample_table;

/*
 * Parse text[0..len) (need not be NUL-terminated). 0, or AP_EINVAL /
 * AP_ERANGE with a one-line reason naming the line in err (may be NULL).
 * *t is all zero on error. No allocation, no locale.
 */
AP_API int ap_sample_table_parse(const char *text, size_t len,
				 ap_sample_table *t, char *err, size_t errlen);

/* R_c for an allocation of size bytes (the base rate below the first
 * class). Binary search: O(log n). */
AP_API uint64_t ap_sample_table_rate(const ap_sample_table *t, uint64_t size);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_SAMPLE_TABLE_H */
