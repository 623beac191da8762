/*
 * metrics.h: the runtime's counters as Prometheus metrics, for GET /metrics
 * of the HTTP endpoint (http.h).
 *
 * One set of families is built from a consistent snapshot of the stack
 * table (estimates, their confidence intervals, sample counts), the
 * HT-weighted allocation-size histogram and the profiler's own costs, and
 * rendered either as text exposition 0.0.4 or as length-delimited
 * io.prometheus.client.MetricFamily protobuf messages; only the latter can
 * carry the size histogram as a Prometheus native histogram. The protobuf
 * is written by hand (a few message types), so the runtime needs no
 * protobuf library. Everything is allocated from the arena.
 */
#ifndef AP_PRELOAD_METRICS_H
#define AP_PRELOAD_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "http_buf.h"
#include "stack_table.h"

/* Confidence level of the exported interval bounds (label level="0.95"). */
#define METRICS_LEVEL 0.95
/* Native-histogram schema of the size histogram: base 2^(1/8), ~9% wide
 * buckets, coarser than the table's 2^-5 log-linear buckets so the
 * proportional split adds no artefacts finer than the data. */
#define METRICS_NATIVE_SCHEMA 3

/* What the profiler itself costs; fields the runtime does not track stay 0
 * with their have_ flag false (then the metric is left out). */
typedef struct metrics_cost {
	bool have_unwind;
	uint64_t unwind_ns;        /* time spent capturing stacks */
	uint64_t extra_memory;     /* mapped outside the arena (sampled set) */
	uint64_t http_requests;    /* requests answered by the endpoint */
	uint64_t http_busy_ns;     /* time spent building responses */
} metrics_cost;

typedef struct metrics_input {
	stack_table *table;
	arena *a;
	uint64_t period; /* the process's R */
	metrics_cost cost;
} metrics_input;

/* Append the text exposition to out. 0, AP_ENOMEM. */
int metrics_render_text(const metrics_input *in, http_buf *out);
/* Append length-delimited MetricFamily messages to out. 0, AP_ENOMEM. */
int metrics_render_proto(const metrics_input *in, http_buf *out);

#endif
