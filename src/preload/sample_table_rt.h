/*
 * sample_table_rt.h: the runtime's sample_table=FILE (per-size-class
 * rates; allocprof/sample_table.h, docs/STATISTICS.md section 10).
 */
#ifndef AP_PRELOAD_SAMPLE_TABLE_RT_H
#define AP_PRELOAD_SAMPLE_TABLE_RT_H

#include <stdbool.h>
#include <stddef.h>

#include "allocprof/sampler.h"
#include "config.h"

/* rt.hot.table_on: true once a table is loaded (set at init, read-only
 * afterwards). */

/*
 * At init, after the options: load o->sample_table (if set). On success
 * o->rate becomes the table's base rate. A missing or bad file costs one
 * stderr line and leaves the options as they were (sampling at rate=).
 */
void rt_table_load(rt_options *o);

/*
 * The slow path's draw for an allocation of n bytes: at its class rate
 * when a table is loaded (ap_sampler_sample_at), else ap_sampler_sample.
 */
void rt_table_sample(ap_sampler *s, size_t n, ap_sample_info *info);

#endif
