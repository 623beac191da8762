/*
 * metrics.c: Prometheus text and protobuf renderings of the runtime's
 * counters (metrics.h).
 *
 * Totals and their intervals come from one table snapshot: the per-site
 * sums of samples, u = size - offset and HT variance estimates are additive
 * (stack_table.h), so summing them over sites gives the whole process's
 * inputs to the row rule of estimate.h (ap_row_bytes_interval and
 * ap_row_objects_interval, the rule every view uses: by the effective
 * sample size of the variance terms, exact only when every sample was
 * recorded with probability 1, the one zero-sample bound; [R4];
 * docs/STATISTICS.md section 5). Sites drawn at different rates (the
 * per-thread rate API) give the row rate 0 and the coarsest rate as
 * rate_max. An objects bound that is unbounded (no sample, no size
 * floor) is written +Inf.
 *
 * Metric names follow Prometheus conventions: base units (bytes, seconds),
 * counters end in _total, gauges never do, interval bounds are separate
 * gauges ..._lower / ..._upper with a level label.
 */
#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "allocprof/estimate.h"
#include "allocprof/hist.h"
#include "procmem.h"

enum { M_COUNTER = 0, M_GAUGE = 1, M_HISTOGRAM = 4 }; /* MetricType values */

#define MAX_FAMILIES 32
#define MAX_SAMPLES 8
#define SIZE_NAME "allocprof_allocation_size_bytes"
#define SIZE_HELP                                                          \
	"Requested sizes of allocations (estimated: sampled allocations "  \
	"weighted by 1/pi)."
/* Classic buckets 2^3 .. 2^32 bytes: at the table's precision powers of
 * two are bucket edges, so these cumulative counts are exact. */
#define SIZE_BOUND_LO 3
#define SIZE_BOUND_HI 32
#define NBOUNDS (SIZE_BOUND_HI - SIZE_BOUND_LO + 1)

typedef struct msample {
	const char *lname, *lvalue; /* NULL: no label */
	double v;
} msample;

typedef struct mfamily {
	const char *name, *help;
	int type;
	msample s[MAX_SAMPLES];
	size_t ns;
} mfamily;

typedef struct mset {
	mfamily f[MAX_FAMILIES];
	size_t n;
	ap_hist_snap *sizes;
} mset;

static void add(mset *m, const char *name, const char *help, int type,
		const char *lname, const char *lvalue, double v)
{
	mfamily *f = m->n ? &m->f[m->n - 1] : NULL;
	if (!f || strcmp(f->name, name) != 0) {
		if (m->n == MAX_FAMILIES)
			return;
		f = &m->f[m->n++];
		memset(f, 0, sizeof *f);
		f->name = name;
		f->help = help;
		f->type = type;
	}
	if (f->ns < MAX_SAMPLES)
		f->s[f->ns++] = (msample){ lname, lvalue, v };
}

/* Additive interval inputs of one view, summed over sites. */
typedef struct view_sums {
	uint64_t samples, exact;
	double u, space, space_var, objects, objects_var;
	double space_var2, objects_var2;
} view_sums;

static void sum_view(view_sums *v, const site_counts *c)
{
	v->samples += c->samples;
	v->exact += c->exact;
	v->space_var2 += c->space_var2;
	v->objects_var2 += c->objects_var2;
	v->u += c->u;
	v->space += c->space;
	v->space_var += c->space_var;
	v->objects += c->objects;
	v->objects_var += c->objects_var;
}

/* Float residue of add-then-subtract can leave tiny negatives: clamp. */
static double nonneg(double x)
{
	return x > 0 ? x : 0;
}

static void add_bounds(mset *m, const char *lo_name, const char *hi_name,
		       const char *lo_help, const char *hi_help, int rc,
		       const ap_interval *iv)
{
	if (rc != 0)
		return; /* no bounds rather than wrong ones */
	add(m, lo_name, lo_help, M_GAUGE, "level", "0.95", iv->lo);
	add(m, hi_name, hi_help, M_GAUGE, "level", "0.95", iv->hi);
}

static void add_view(mset *m, const view_sums *v, double rate,
		     double rate_max, bool alloc)
{
	bool empty = v->samples == 0;
	double bytes = empty ? 0 : nonneg(v->space);
	double objects = empty ? 0 : nonneg(v->objects);
	ap_row row = {
		.samples = v->samples,
		.exact_samples = v->exact,
		.u = empty ? 0 : nonneg(v->u),
		.bytes = bytes,
		.var_bytes = empty ? 0 : nonneg(v->space_var),
		.var2_bytes = empty ? 0 : nonneg(v->space_var2),
		.objects = objects,
		.var_objects = empty ? 0 : nonneg(v->objects_var),
		.var2_objects = empty ? 0 : nonneg(v->objects_var2),
		.rate = rate,
		.rate_max = rate_max,
		.z_min = 0,
	};
	ap_interval ib, io;
	int rb = ap_row_bytes_interval(&row, METRICS_LEVEL, &ib, NULL);
	int ro = ap_row_objects_interval(&row, METRICS_LEVEL, &io, NULL);
	if (alloc) {
		add(m, "allocprof_allocated_bytes_total",
		    "Bytes allocated since the program started (unbiased estimate).",
		    M_COUNTER, NULL, NULL, bytes);
		add(m, "allocprof_allocated_objects_total",
		    "Allocations since the program started (unbiased estimate).",
		    M_COUNTER, NULL, NULL, objects);
		add_bounds(m, "allocprof_allocated_bytes_lower",
			   "allocprof_allocated_bytes_upper",
			   "Lower confidence bound of allocprof_allocated_bytes_total.",
			   "Upper confidence bound of allocprof_allocated_bytes_total.",
			   rb, &ib);
		add_bounds(m, "allocprof_allocated_objects_lower",
			   "allocprof_allocated_objects_upper",
			   "Lower confidence bound of allocprof_allocated_objects_total.",
			   "Upper confidence bound of allocprof_allocated_objects_total.",
			   ro, &io);
		return;
	}
	add(m, "allocprof_inuse_bytes",
	    "Bytes allocated and not yet freed (unbiased estimate).", M_GAUGE, NULL,
	    NULL, bytes);
	add(m, "allocprof_inuse_objects",
	    "Allocations not yet freed (unbiased estimate).", M_GAUGE, NULL, NULL,
	    objects);
	add_bounds(m, "allocprof_inuse_bytes_lower", "allocprof_inuse_bytes_upper",
		   "Lower confidence bound of allocprof_inuse_bytes.",
		   "Upper confidence bound of allocprof_inuse_bytes.", rb, &ib);
	add_bounds(m, "allocprof_inuse_objects_lower", "allocprof_inuse_objects_upper",
		   "Lower confidence bound of allocprof_inuse_objects.",
		   "Upper confidence bound of allocprof_inuse_objects.", ro, &io);
}

static void add_cost(mset *m, const metrics_input *in, const table_totals *tot)
{
	const metrics_cost *c = &in->cost;
	add(m, "allocprof_sampled_allocations_total",
	    "Allocations the sampler recorded (each unwound and counted).",
	    M_COUNTER, NULL, NULL, (double)tot->samples);
	add(m, "allocprof_sampled_frees_total", "Frees of recorded allocations.",
	    M_COUNTER, NULL, NULL, (double)tot->frees);
	add(m, "allocprof_sampling_interval_bytes",
	    "Mean bytes between samples (R).", M_GAUGE, NULL, NULL,
	    (double)in->period);
	add(m, "allocprof_peak_inuse_bytes",
	    "Highest allocprof_inuse_bytes seen: the maximum of noisy "
	    "estimates, so biased upward.",
	    M_GAUGE, NULL, NULL, nonneg(tot->peak_inuse_space));
	add(m, "allocprof_stacks", "Distinct call stacks recorded.", M_GAUGE, NULL,
	    NULL, (double)tot->nstacks);
	add(m, "allocprof_sites", "Distinct (stack, size class) sites recorded.", M_GAUGE,
	    NULL, NULL, (double)tot->nsites);
	if (c->have_unwind)
		add(m, "allocprof_unwind_seconds_total",
		    "Time spent capturing the stacks of sampled allocations.",
		    M_COUNTER, NULL, NULL, (double)c->unwind_ns / 1e9);
	size_t mapped, in_use;
	arena_lock(in->a);
	mapped = in->a->mapped;
	in_use = in->a->in_use;
	arena_unlock(in->a);
	const char *mem_help = "Memory the profiler holds, by kind.";
	add(m, "allocprof_internal_memory_bytes", mem_help, M_GAUGE, "kind",
	    "arena_mapped", (double)mapped);
	add(m, "allocprof_internal_memory_bytes", mem_help, M_GAUGE, "kind",
	    "arena_in_use", (double)in_use);
	add(m, "allocprof_internal_memory_bytes", mem_help, M_GAUGE, "kind",
	    "sampled_set", (double)c->extra_memory);
	add(m, "allocprof_http_requests_total",
	    "Requests answered by this endpoint (this one excluded).", M_COUNTER,
	    NULL, NULL, (double)c->http_requests);
	add(m, "allocprof_http_busy_seconds_total",
	    "Time the endpoint spent building responses.", M_COUNTER, NULL, NULL,
	    (double)c->http_busy_ns / 1e9);
}

/* The process's memory (procmem.h; docs/MEMORY.md): what was measured. */
static void add_memory(mset *m)
{
	static const struct {
		const char *name, *help, *kind;
		ap_memory_key k;
	} rows[] = {
#define PROC_HELP "Resident memory of the process, by kind (kernel's view)."
#define ALLOC_HELP "The allocator's own statistics (mallinfo2, mallctl, MallocExtension)."
		{ "allocprof_process_memory_bytes", PROC_HELP, "rss", AP_MEM_RSS },
		{ "allocprof_process_memory_bytes", PROC_HELP, "anon", AP_MEM_ANON },
		{ "allocprof_process_memory_bytes", PROC_HELP, "file", AP_MEM_FILE },
		{ "allocprof_process_memory_bytes", PROC_HELP, "shmem", AP_MEM_SHMEM },
		{ "allocprof_process_memory_bytes", PROC_HELP, "swap", AP_MEM_SWAP },
		{ "allocprof_cgroup_memory_usage_bytes", "Memory charged to the process's cgroup.",
		  NULL, AP_MEM_CGROUP_USAGE },
		{ "allocprof_cgroup_memory_limit_bytes", "The cgroup's memory limit (absent: none).",
		  NULL, AP_MEM_CGROUP_LIMIT },
		{ "allocprof_allocator_bytes", ALLOC_HELP, "allocated", AP_MEM_ALLOC_ALLOCATED },
		{ "allocprof_allocator_bytes", ALLOC_HELP, "active", AP_MEM_ALLOC_ACTIVE },
		{ "allocprof_allocator_bytes", ALLOC_HELP, "mapped", AP_MEM_ALLOC_MAPPED },
		{ "allocprof_allocator_bytes", ALLOC_HELP, "resident", AP_MEM_ALLOC_RESIDENT },
		{ "allocprof_allocator_bytes", ALLOC_HELP, "retained", AP_MEM_ALLOC_RETAINED },
		{ "allocprof_allocator_bytes", ALLOC_HELP, "metadata", AP_MEM_ALLOC_METADATA },
		{ "allocprof_allocator_bytes", ALLOC_HELP, "free", AP_MEM_ALLOC_FREE },
#undef PROC_HELP
#undef ALLOC_HELP
	};
	ap_memory pm;
	procmem_read(&pm, true);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		uint64_t v;
		if (ap_memory_get(&pm, rows[i].k, &v))
			add(m, rows[i].name, rows[i].help, M_GAUGE,
			    rows[i].kind ? "kind" : NULL, rows[i].kind, (double)v);
	}
}

static int collect(const metrics_input *in, mset *m)
{
	memset(m, 0, sizeof *m);
	view_sums va, vu;
	memset(&va, 0, sizeof va);
	memset(&vu, 0, sizeof vu);
	bool one_rate = true;
	double rate_max = (double)in->period;
	table_totals tot;
	/* Sum in place under the table's lock: one pass over the sites, no
	 * copy (table_snapshot would copy every site, megabytes for a large
	 * profile, on every scrape). */
	stack_table *t = in->table;
	table_lock(t);
	for (const site *s = t->all_sites; s; s = s->all_next) {
		sum_view(&va, &s->alloc);
		sum_view(&vu, &s->inuse);
		if (s->rate != in->period)
			one_rate = false;
		if ((double)s->rate > rate_max)
			rate_max = (double)s->rate;
	}
	tot = t->tot;
	tot.nstacks = t->nstacks;
	tot.nsites = t->nsites;
	table_flush_locked(t); /* the size histogram, read below */
	table_unlock(t);
	double rate = one_rate ? (double)in->period : 0;
	add_view(m, &va, rate, rate_max, true);
	add_view(m, &vu, rate, rate_max, false);
	add_cost(m, in, &tot);
	add_memory(m);
	return ap_hist_snapshot(in->table->hist_size, arena_allocator(in->a),
				&m->sizes);
}

static void release(const metrics_input *in, mset *m)
{
	(void)in;
	ap_hist_snap_destroy(m->sizes);
	m->sizes = NULL;
}

static void size_bounds(uint64_t b[NBOUNDS])
{
	for (int i = 0; i < NBOUNDS; i++)
		b[i] = (uint64_t)1 << (SIZE_BOUND_LO + i);
}

/* ---- text exposition 0.0.4 --------------------------------------------- */

static void put_value(http_buf *out, double v)
{
	if (isnan(v))
		hb_puts(out, "NaN");
	else if (isinf(v))
		hb_puts(out, v > 0 ? "+Inf" : "-Inf");
	else
		hb_printf(out, "%.17g", v);
}

int metrics_render_text(const metrics_input *in, http_buf *out)
{
	mset m;
	int rc = collect(in, &m);
	for (size_t i = 0; rc == 0 && i < m.n; i++) {
		const mfamily *f = &m.f[i];
		hb_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help,
			  f->name, f->type == M_COUNTER ? "counter" : "gauge");
		for (size_t k = 0; k < f->ns; k++) {
			hb_puts(out, f->name);
			if (f->s[k].lname)
				hb_printf(out, "{%s=\"%s\"}", f->s[k].lname, f->s[k].lvalue);
			hb_puts(out, " ");
			put_value(out, f->s[k].v);
			hb_puts(out, "\n");
		}
	}
	if (rc == 0) {
		uint64_t bounds[NBOUNDS];
		size_bounds(bounds);
		const ap_allocator *al = arena_allocator(in->a);
		char *text = NULL;
		size_t len = 0;
		rc = ap_hist_export_prometheus(m.sizes, SIZE_NAME, SIZE_HELP, bounds,
					       NBOUNDS, al, &text, &len);
		if (rc == 0) {
			hb_put(out, text, len);
			ap_hist_buffer_free(al, text, len);
		}
	}
	release(in, &m);
	if (rc == 0 && hb_failed(out))
		rc = AP_ENOMEM;
	return rc;
}

/* ---- protobuf (io.prometheus.client, length-delimited) ----------------- */

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };

static void pw_varint(http_buf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	hb_put(b, tmp, n);
}

static void pw_tag(http_buf *b, unsigned field, unsigned wt)
{
	pw_varint(b, (uint64_t)field << 3 | wt);
}

static void pw_double(http_buf *b, unsigned field, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	unsigned char le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(bits >> (8 * i));
	pw_tag(b, field, WT_FIXED64);
	hb_put(b, le, sizeof le);
}

static void pw_uint(http_buf *b, unsigned field, uint64_t v)
{
	pw_tag(b, field, WT_VARINT);
	pw_varint(b, v);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void pw_bytes(http_buf *b, unsigned field, const void *p, size_t n)
{
	pw_tag(b, field, WT_LEN);
	pw_varint(b, n);
	hb_put(b, p, n);
}

/* Append the message built in child as field `field` of b, and empty child. */
static void pw_sub(http_buf *b, unsigned field, http_buf *child)
{
	if (child->failed)
		b->failed = true;
	pw_bytes(b, field, child->p, child->n);
	child->n = 0;
}

typedef struct pw_scratch {
	http_buf fam, metric, inner, part;
} pw_scratch;

/* Histogram message (classic buckets and native schema) into s->inner. */
static int proto_histogram(const metrics_input *in, const ap_hist_snap *h,
			   pw_scratch *s)
{
	http_buf *hm = &s->inner, *part = &s->part;
	uint64_t count = ap_hist_snap_count(h), sum_hi, sum_lo;
	ap_hist_snap_sum(h, &sum_hi, &sum_lo);
	pw_uint(hm, 1, count);
	pw_double(hm, 2, (double)sum_hi * 18446744073709551616.0 + (double)sum_lo);
	uint64_t bounds[NBOUNDS];
	size_bounds(bounds);
	for (int i = 0; i < NBOUNDS; i++) {
		double below = ap_hist_snap_count_below(h, bounds[i] + 1, NULL, NULL);
		pw_uint(part, 1, (uint64_t)llround(below));
		pw_double(part, 2, (double)bounds[i]);
		pw_sub(hm, 3, part);
	}
	ap_hist_exp e;
	int rc = ap_hist_export_exp(h, METRICS_NATIVE_SCHEMA, arena_allocator(in->a), &e);
	if (rc != 0)
		return rc;
	pw_uint(hm, 5, zigzag(METRICS_NATIVE_SCHEMA));
	pw_double(hm, 6, 0.0);
	pw_uint(hm, 7, e.zero_count);
	/* One span over the dense range (empty buckets inside a span are
	 * allowed); Prometheus' index is OTel's + 1 (hist.h). An empty
	 * histogram gets the no-op span that marks it as native. */
	pw_uint(part, 1, zigzag(e.ncounts ? (int64_t)e.offset + 1 : 0));
	pw_uint(part, 2, e.ncounts);
	pw_sub(hm, 12, part);
	uint64_t prev = 0;
	for (size_t i = 0; i < e.ncounts; i++) {
		pw_varint(part, zigzag((int64_t)(e.counts[i] - prev)));
		prev = e.counts[i];
	}
	if (e.ncounts)
		pw_sub(hm, 13, part); /* packed sint64 deltas */
	ap_hist_exp_free(arena_allocator(in->a), &e);
	return 0;
}

static void end_family(http_buf *out, http_buf *fam)
{
	if (fam->failed)
		out->failed = true;
	pw_varint(out, fam->n);
	hb_put(out, fam->p, fam->n);
	fam->n = 0;
}

int metrics_render_proto(const metrics_input *in, http_buf *out)
{
	mset m;
	int rc = collect(in, &m);
	pw_scratch s;
	hb_init(&s.fam, in->a);
	hb_init(&s.metric, in->a);
	hb_init(&s.inner, in->a);
	hb_init(&s.part, in->a);
	for (size_t i = 0; rc == 0 && i < m.n; i++) {
		const mfamily *f = &m.f[i];
		pw_bytes(&s.fam, 1, f->name, strlen(f->name));
		pw_bytes(&s.fam, 2, f->help, strlen(f->help));
		pw_uint(&s.fam, 3, (uint64_t)f->type);
		for (size_t k = 0; k < f->ns; k++) {
			if (f->s[k].lname) {
				pw_bytes(&s.part, 1, f->s[k].lname, strlen(f->s[k].lname));
				pw_bytes(&s.part, 2, f->s[k].lvalue, strlen(f->s[k].lvalue));
				pw_sub(&s.metric, 1, &s.part);
			}
			pw_double(&s.inner, 1, f->s[k].v);
			pw_sub(&s.metric, f->type == M_COUNTER ? 3 : 2, &s.inner);
			pw_sub(&s.fam, 4, &s.metric);
		}
		end_family(out, &s.fam);
	}
	if (rc == 0) {
		pw_bytes(&s.fam, 1, SIZE_NAME, strlen(SIZE_NAME));
		pw_bytes(&s.fam, 2, SIZE_HELP, strlen(SIZE_HELP));
		pw_uint(&s.fam, 3, M_HISTOGRAM);
		rc = proto_histogram(in, m.sizes, &s);
		pw_sub(&s.metric, 7, &s.inner);
		pw_sub(&s.fam, 4, &s.metric);
		end_family(out, &s.fam);
	}
	bool failed = s.fam.failed || s.metric.failed || s.inner.failed || s.part.failed;
	hb_free(&s.fam);
	hb_free(&s.metric);
	hb_free(&s.inner);
	hb_free(&s.part);
	release(in, &m);
	if (rc == 0 && (failed || hb_failed(out)))
		rc = AP_ENOMEM;
	return rc;
}
