/*
 * memview.c: the memory waterfall of `allocprof report --memory`
 * (memview.h; docs/MEMORY.md).
 *
 * Every step is a measured value or the difference of two measured values
 * of the same record; a step whose inputs the record lacks is "unknown"
 * (null in JSON), never estimated. The steps:
 *   heap estimate        the profile's in-use bytes, with their interval
 *   allocated            the allocator's allocated bytes plus the sampled
 *                        blocks allocprof's range holds for the program
 *   allocator overhead   the allocator's footprint (resident when it says,
 *                        else mapped: glibc) minus its allocated bytes
 *   allocprof's own      arena, cached range pages, side table and set
 *   other anonymous      anonymous RSS minus all of the above (mmap outside
 *                        the allocator, thread stacks, data segments)
 *   file-backed, shmem   from the kernel
 *   RSS                  from the kernel
 */
#include "memview.h"

#include <math.h>
#include <string.h>

#include "allocprof/memory.h"
#include "cli_util.h"

int memview_find(const ap_profile *p, ap_memory *m, char *trigger, size_t cap)
{
	size_t cur = 0;
	const ap_profile_ext *e, *last = NULL;
	while ((e = ap_profile_ext_next(p, AP_EXT_MEMORY, false, &cur)))
		last = e;
	if (trigger && cap) {
		trigger[0] = '\0';
		cur = 0;
		const ap_profile_ext *t = ap_profile_ext_next(p, AP_EXT_TRIGGER, false, &cur);
		if (t) {
			size_t n = t->len < cap - 1 ? t->len : cap - 1;
			for (size_t i = 0; i < n; i++) /* printable only */
				trigger[i] = t->data[i] >= ' ' && t->data[i] < 127
						     ? (char)t->data[i] : '?';
			trigger[n] = '\0';
		}
	}
	if (!last)
		return AP_ENOTFOUND;
	return ap_memory_decode(last->data, last->len, m);
}

/* The derived steps; have_* false = unknown. */
typedef struct steps {
	bool have_alloc, have_over, have_own, have_other;
	double allocated, footprint, overhead, own, other;
	const char *footprint_kind; /* "resident" or "mapped" */
} steps;

static bool get(const ap_memory *m, ap_memory_key k, double *v)
{
	uint64_t x;
	if (!ap_memory_get(m, k, &x))
		return false;
	*v = (double)x;
	return true;
}

static void derive(const ap_memory *m, steps *s)
{
	memset(s, 0, sizeof *s);
	double range = 0, cached, arena, other, anon;
	get(m, AP_MEM_RUNTIME_RANGE, &range); /* no range: nothing there */
	s->have_alloc = get(m, AP_MEM_ALLOC_ALLOCATED, &s->allocated);
	s->allocated += range;
	s->footprint_kind = "resident";
	bool have_fp = get(m, AP_MEM_ALLOC_RESIDENT, &s->footprint);
	if (!have_fp) {
		s->footprint_kind = "mapped";
		have_fp = get(m, AP_MEM_ALLOC_MAPPED, &s->footprint);
	}
	s->have_over = s->have_alloc && have_fp;
	if (s->have_over)
		s->overhead = s->footprint + range - s->allocated;
	s->have_own = get(m, AP_MEM_RUNTIME_CACHED, &cached) &&
		      get(m, AP_MEM_RUNTIME_ARENA, &arena) &&
		      get(m, AP_MEM_RUNTIME_OTHER, &other);
	if (s->have_own)
		s->own = cached + arena + other;
	s->have_other = s->have_over && s->have_own && get(m, AP_MEM_ANON, &anon);
	if (s->have_other)
		s->other = anon - (s->footprint + range) - s->own;
}

static void line(FILE *out, const char *label, bool have, double v, const char *note)
{
	char b[32];
	if (have) {
		ap_cli_format_bytes(fabs(v), AP_BYTES_SHORT, b + 1, sizeof b - 1);
		b[0] = '-';
	}
	fprintf(out, "  %-34s %12s  %s\n", label,
		have ? (v < 0 ? b : b + 1) : "unknown", note ? note : "");
}

static void kline(FILE *out, const char *label, const ap_memory *m, ap_memory_key k,
		  const char *note)
{
	double v = 0;
	bool have = get(m, k, &v);
	line(out, label, have, v, note);
}

void memview_print(FILE *out, const ap_memory *m, const char *trigger,
		   const hv_stat *heap, double level)
{
	steps s;
	derive(m, &s);
	char lo[32], hi[32], note[96];
	fprintf(out, "\nProcess memory at the dump (allocator %s; resident set from %s)%s%s\n\n",
		m->allocator[0] ? m->allocator : "unknown",
		m->source[0] ? m->source : "nowhere", trigger && trigger[0] ? "; trigger " : "",
		trigger && trigger[0] ? trigger : "");
	ap_cli_format_bytes(heap->bytes_lo, AP_BYTES_SHORT, lo, sizeof lo);
	ap_cli_format_bytes(heap->bytes_hi, AP_BYTES_SHORT, hi, sizeof hi);
	snprintf(note, sizeof note, "[%s, %s] at %g", lo, hi, level);
	line(out, "sampled live heap (estimate)", true, heap->bytes, note);
	line(out, "allocated (allocator + range)", s.have_alloc, s.allocated,
	     "what the program holds in malloc'd blocks");
	snprintf(note, sizeof note, "allocator's %s - allocated", s.footprint_kind);
	line(out, "+ allocator overhead, free space", s.have_over, s.overhead, note);
	double meta;
	if (s.have_over && get(m, AP_MEM_ALLOC_METADATA, &meta))
		line(out, "    of which the allocator's metadata", true, meta,
		     "its own bookkeeping");
	line(out, "+ allocprof's own", s.have_own, s.own, "arena, cached pages, tables");
	line(out, "+ other anonymous memory", s.have_other, s.other,
	     "mmap outside the allocator, stacks, data");
	kline(out, "= anonymous", m, AP_MEM_ANON, NULL);
	kline(out, "+ file-backed", m, AP_MEM_FILE, "code, mapped files");
	kline(out, "+ shared memory (shmem)", m, AP_MEM_SHMEM, NULL);
	kline(out, "= resident set (RSS)", m, AP_MEM_RSS, NULL);
	kline(out, "swapped out", m, AP_MEM_SWAP, NULL);
	kline(out, "cgroup usage", m, AP_MEM_CGROUP_USAGE, NULL);
	uint64_t x;
	if (ap_memory_get(m, AP_MEM_CGROUP_LIMIT, &x))
		line(out, "cgroup limit", true, (double)x, NULL);
	else if (ap_memory_get(m, AP_MEM_CGROUP_USAGE, &x))
		fprintf(out, "  %-34s %12s\n", "cgroup limit", "none");
}

static void jnum(json_writer *w, const char *key, bool have, double v)
{
	json_key(w, key);
	if (have)
		json_number(w, v);
	else
		json_null(w);
}

void memview_json(json_writer *w, const ap_memory *m, const char *trigger,
		  const hv_stat *heap)
{
	steps s;
	derive(m, &s);
	json_begin_object(w);
	json_key(w, "allocator");
	json_string(w, m->allocator[0] ? m->allocator : NULL);
	json_key(w, "source");
	json_string(w, m->source[0] ? m->source : NULL);
	json_key(w, "trigger");
	json_string(w, trigger && trigger[0] ? trigger : NULL);
	jnum(w, "heap_estimate_bytes", true, round(heap->bytes));
	jnum(w, "heap_estimate_lo_bytes", true, floor(heap->bytes_lo));
	jnum(w, "heap_estimate_hi_bytes", true, ceil(heap->bytes_hi));
	jnum(w, "program_allocated_bytes", s.have_alloc, s.allocated);
	jnum(w, "allocator_overhead_bytes", s.have_over, s.overhead);
	jnum(w, "runtime_own_bytes", s.have_own, s.own);
	jnum(w, "other_anon_bytes", s.have_other, s.other);
	for (unsigned k = 0; k < AP_MEM_NKEYS; k++) {
		double v = 0;
		bool have = get(m, (ap_memory_key)k, &v);
		jnum(w, ap_memory_key_name((ap_memory_key)k), have, v);
	}
	json_end_object(w);
}

int memview_prepare(const ap_profile *p, const hv_options *o, memview *mv,
		    char *err, size_t errlen)
{
	memset(mv, 0, sizeof *mv);
	int rc = memview_find(p, &mv->mem, mv->trigger, sizeof mv->trigger);
	if (rc == AP_ENOTFOUND) {
		ap_cli_seterr(err, errlen, "the profile has no process-memory record "
			      "(written by an older runtime, or not by allocprof's)");
		return AP_EXIT_INPUT;
	}
	if (rc) {
		ap_cli_seterr(err, errlen, "the process-memory record is malformed");
		return AP_EXIT_INPUT;
	}
	hv_options io = *o;
	io.view = HV_INUSE;
	hv_view *v;
	char why[512];
	if (hv_build(p, &io, &v, why, sizeof why)) {
		ap_cli_seterr(err, errlen, "%s", why);
		return AP_EXIT_INPUT;
	}
	mv->heap = *hv_total(v);
	mv->level = io.level;
	hv_destroy(v);
	return 0;
}
