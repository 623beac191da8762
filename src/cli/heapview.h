/*
 * heapview.h: what a person reads from heap profiles. Loads one or more
 * heap profiles (profload.h: pprof or heap_v2 text, plain or gzip'd;
 * several are merged: values are already unbiased, so they add; samples
 * drawn at another rate keep their own weight through a "rate" label),
 * symbolizes them (symbolize.h), then builds a view: alloc or inuse, requested or usable bytes, filtered by function-name
 * regexes and allocation size, aggregated by function, line or stack, each
 * aggregate carrying its HT estimates, sample counts, NB sums and confidence
 * intervals at a chosen level (estimate.h's row rule, ap_row_bytes_interval
 * and ap_row_objects_interval: by where the uncertainty is, the effective
 * sample size; the one zero-sample bound; "exact" only when every sample
 * was recorded with probability 1).
 *
 * Used by report, diff, flame, folded and convert. Typical use:
 *
 *     hv_options o;
 *     hv_options_default(&o);
 *     o.view = HV_ALLOC;
 *     hv_view *v;
 *     char err[256];
 *     if (hv_open(paths, n, &o, &v, err, sizeof err))
 *             { ap_cli_error("%s", err); return AP_EXIT_INPUT; }
 *     for (size_t i = 0; i < hv_nsites(v); i++) {
 *             const hv_site *s = hv_site_at(v, i);   (largest bytes first)
 *             ... s->name, s->stat.bytes, s->stat.bytes_lo ...
 *     }
 *     hv_destroy(v);
 *
 * Profiles without allocprof's extra sample types (e.g. Go's heap profiles)
 * are read too: per sample the size comes from label "bytes" or value/count,
 * pi from size and period, samples ~= count * pi, u from the expected offset
 * of the sampled byte; hv_view_approximate() is then true and every output
 * should say the intervals are approximate.
 *
 * Frames: a location expands to its inline frames (innermost first); leading
 * frames of allocator entry points (malloc, calloc, realloc, operator new,
 * ...), of allocprof itself, of the C++ runtime (namespace std and its
 * kin, fn_is_std_frame; any frame in libstdc++'s mapping) and of the
 * user's --skip regexes are dropped, so a site's first frame is the user's
 * code that asked for memory. C++ names are shortened (fn_shorten) unless
 * full_names. Unsymbolized frames are named "file+0xOFFSET" (or
 * "0xADDRESS" without a mapping).
 *
 * All strings returned point into the view and live until hv_destroy().
 * A view is not thread-safe: intervals of sites and stacks are computed on
 * first access through hv_site_at / hv_stack_at.
 * Functions returning int give 0 or a negative AP_E* code with a one-line
 * reason in err (which already names the file when one is involved).
 */
#ifndef ALLOCPROF_CLI_HEAPVIEW_H
#define ALLOCPROF_CLI_HEAPVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/estimate.h"
#include "allocprof/profile.h"

typedef enum hv_kind { HV_INUSE = 0, HV_ALLOC = 1 } hv_kind;
typedef enum hv_value { HV_REQUESTED = 0, HV_USABLE = 1 } hv_value;
typedef enum hv_by { HV_BY_FUNCTION = 0, HV_BY_LINE = 1, HV_BY_STACK = 2 } hv_by;


/* At most this many --skip regexes. */
#define HV_MAX_SKIP 16

typedef struct hv_options {
	hv_kind view;        /* default HV_INUSE */
	hv_value value;      /* default HV_REQUESTED */
	hv_by by;            /* default HV_BY_FUNCTION */
	double level;        /* default 0.95 */
	const char *focus;   /* POSIX ERE: keep samples with a frame matching; NULL = all */
	const char *ignore;  /* POSIX ERE: drop samples with a frame matching; NULL = none */
	uint64_t size_min;   /* keep samples whose "bytes" label is in */
	uint64_t size_max;   /*   [size_min, size_max]; default 0..UINT64_MAX */
	bool symbolize;      /* default true: libdw for unsymbolized mappings */
	bool keep_alloc_frames; /* default false: drop allocator/allocprof leaf
	                           frames (--no-skip: true, skip nothing) */
	bool full_names;     /* default false: C++ names shortened (framename.h) */
	const char *skip[HV_MAX_SKIP]; /* POSIX ERE (--skip): leaf frames whose */
	size_t nskip;                  /*   name matches are dropped too */
} hv_options;

void hv_options_default(hv_options *o);

/* Maximum distinct sampling rates tracked per statistic (NB groups). */
#define HV_MAX_RATES 8

/*
 * Additive sums of one aggregate plus its intervals. Add raw sums with
 * hv_stat_add, then hv_stat_finish fills bytes_lo..objects_hi and method.
 */
typedef struct hv_stat {
	double bytes, objects;          /* HT estimates */
	double req_bytes;               /* HT requested bytes when bytes holds
	                                   usable bytes (0 = same as bytes) */
	double var_bytes, var_objects;  /* HT variance estimates */
	double var2_bytes, var2_objects; /* sums of squared variance terms
	                                    (0 when the profile lacks them) */
	uint64_t samples;               /* sampled allocations */
	uint64_t exact_samples;         /* of which recorded with pi = 1 */
	double rate_max;                /* coarsest rate behind the sums (a
	                                   row without samples: the view's) */
	uint64_t z_min;                 /* smallest object size the row can
	                                   hold (the size filter); 0 unknown */
	double u;                       /* sum of size - offset (NB) */
	ap_nb_group rates[HV_MAX_RATES]; /* (samples, u) per sampling rate */
	size_t nrates;                  /* > HV_MAX_RATES never; see rates_overflow */
	bool rates_overflow;            /* too many rates: normal interval only */
	/* filled by hv_stat_finish: */
	double bytes_lo, bytes_hi, objects_lo, objects_hi;
	ap_ci_method method;     /* of the bytes interval */
	ap_ci_method obj_method; /* of the objects interval */
} hv_stat;

/* into += from (all sums and per-rate groups). */
void hv_stat_add(hv_stat *into, const hv_stat *from);
/* Add one group of samples drawn at rate (its sample count and sum of u),
 * kept apart from other rates for the NB interval; at most HV_MAX_RATES
 * rates, after which rates_overflow is set. */
void hv_stat_add_group(hv_stat *s, double rate, uint64_t samples, double u);
/* The row of estimate.h the sums make (bytes in requested terms; *scale
 * = view bytes / requested bytes, by which the bytes bounds multiply). */
void hv_stat_row(const hv_stat *s, ap_row *row, double *scale);
/* Compute intervals at level from the sums (never fails; NaN on bad sums;
 * objects_hi may be +INFINITY: "unbounded"). */
void hv_stat_finish(hv_stat *s, double level);

/* One frame of a symbolized stack. */
typedef struct hv_frame {
	const char *function; /* demangled name, or "file+0xOFF" / "0xADDR" */
	const char *file;     /* source file, "" when unknown */
	int64_t line;         /* 0 when unknown */
	uint64_t address;     /* Location.address */
	bool inlined;         /* an inline frame (not the location's last line) */
} hv_frame;

/* One aggregate row: a function, a line or a whole stack. */
typedef struct hv_site {
	const char *name;      /* display key: "fn", "fn file:line" or "root;...;leaf" */
	const char *function;  /* first frame's function */
	const char *file;      /* first frame's file ("" unknown) */
	int64_t line;          /* first frame's line (0 unknown; for HV_BY_FUNCTION
	                          that of the site's largest single sample) */
	const hv_frame *stack; /* representative stack, leaf first: that of */
	size_t nstack;         /*   the site's largest single sample */
	bool several_files;    /* HV_BY_FUNCTION: its samples' first frames lie
	                          in more than one file (two static functions
	                          of one name), so file and line speak for the
	                          largest part only */
	hv_stat stat;
} hv_site;

typedef struct hv_view hv_view;

/*
 * Load, merge, symbolize (if o->symbolize) and aggregate. paths[0..n-1]
 * name gzip'd or plain pprof files ("-" = stdin). AP_ECORRUPT for bad
 * files (err: "PATH: reason"), AP_EIO for unreadable ones, AP_EINVAL for bad
 * options (e.g. a regex that does not compile).
 */
int hv_open(const char *const *paths, size_t n, const hv_options *o,
	    hv_view **out, char *err, size_t errlen);

/* Build a view from an already loaded profile (not modified, not kept). */
int hv_build(const ap_profile *p, const hv_options *o, hv_view **out,
	     char *err, size_t errlen);

void hv_destroy(hv_view *v);

/* Totals over everything that passed the filters, intervals finished. */
const hv_stat *hv_total(const hv_view *v);
/* Sites sorted by bytes, largest first (ties by name). */
size_t hv_nsites(const hv_view *v);
const hv_site *hv_site_at(const hv_view *v, size_t i);

/*
 * Every distinct stack (after frame dropping) with its statistic, in a
 * stable order (by root-first frame names): for folded and flame output.
 * frames are leaf first; use frames[nframes-1] as the root.
 */
size_t hv_nstacks(const hv_view *v);
const hv_site *hv_stack_at(const hv_view *v, size_t i);

/* The profile period (mean sampling interval R; the output rate of a merge). */
double hv_rate(const hv_view *v);
/* Whether several sampling rates contributed. */
bool hv_mixed_rates(const hv_view *v);
/* The coarsest sampling rate of the view's inputs (the bound of a row
 * without samples, ap_coarsest_rate). */
double hv_coarsest_rate(const hv_view *v);
/* True when intervals were derived approximately (non-allocprof profiles). */
bool hv_view_approximate(const hv_view *v);
/* The options the view was built with (level, kind, ...). */
const hv_options *hv_view_options(const hv_view *v);
/* "alloc"/"inuse", "requested"/"usable", "function"/"line"/"stack". */
const char *hv_kind_name(hv_kind k);
const char *hv_value_name(hv_value v);
const char *hv_by_name(hv_by b);
/* ap_ci_method_name: "none sampled", "exact", "nb", "split", "normal". */
const char *hv_method_name(ap_ci_method m);

/*
 * Whether a function name is an allocator entry point or part of
 * allocprof, i.e. a frame reports skip at the leaf end of a stack.
 */
bool hv_is_alloc_frame(const char *function);

#endif /* ALLOCPROF_CLI_HEAPVIEW_H */
