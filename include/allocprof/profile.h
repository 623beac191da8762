/*
 * allocprof/profile.h: the in-memory heap profile.
 *
 * The model is pprof's Profile message (google/pprof proto/profile.proto)
 * held in plain arrays, so any pprof profile (Go's heap profiles included)
 * can be decoded into it and re-encoded without loss, and so the heap_v2
 * text format, folded stacks and reports can be produced from one place.
 * String fields are indices into strings[] (entry 0 is always "").
 *
 * Ownership: a profile owns all its memory, which comes from the allocator
 * given at creation (NULL = libc). The arrays below are read-only to users;
 * add to a profile only through the ap_profile_add_* builders, which keep ids
 * unique and references valid. Not thread-safe: one thread builds, then any
 * number may read.
 *
 * allocprof heap profiles: the first four sample types are Go's
 * (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes), period_type space/bytes, period = the mean sampling
 * interval R. Values are already unbiased (Horvitz-Thompson), rounded to
 * integers. The AP_ST_* types after them are additive and carry what
 * confidence intervals and merging need; tools that do not know them ignore
 * them. Each sample is one (stack, requested size) pair: numeric label
 * "bytes" = the size (Go's convention). A sample drawn at a rate other than
 * the profile's period carries numeric label "rate" (bytes).
 */
#ifndef ALLOCPROF_PROFILE_H
#define ALLOCPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"
#include "allocprof/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sample type names of allocprof heap profiles (units in comments). */
#define AP_ST_ALLOC_OBJECTS "alloc_objects"         /* count */
#define AP_ST_ALLOC_SPACE "alloc_space"             /* bytes */
#define AP_ST_INUSE_OBJECTS "inuse_objects"         /* count */
#define AP_ST_INUSE_SPACE "inuse_space"             /* bytes */
#define AP_ST_ALLOC_SAMPLES "alloc_samples"         /* count: sampled allocations s */
#define AP_ST_ALLOC_U "alloc_u"                     /* bytes: sum of size - offset */
#define AP_ST_ALLOC_SPACE_VAR "alloc_space_var"     /* bytes^2: HT variance estimate */
#define AP_ST_ALLOC_OBJECTS_VAR "alloc_objects_var" /* count^2 */
#define AP_ST_INUSE_SAMPLES "inuse_samples"         /* count */
#define AP_ST_INUSE_U "inuse_u"                     /* bytes */
#define AP_ST_INUSE_SPACE_VAR "inuse_space_var"     /* bytes^2 */
#define AP_ST_INUSE_OBJECTS_VAR "inuse_objects_var" /* count^2 */
#define AP_ST_ALLOC_USABLE "alloc_usable_space"     /* bytes: HT of usable size */
#define AP_ST_INUSE_USABLE "inuse_usable_space"     /* bytes */
/*
 * For the row rule of allocprof/estimate.h; declared by
 * ap_profile_init_heap after the fourteen above. Older profiles
 * without them still read: the row functions then take the effective
 * sample size to be the sample count.
 */
#define AP_ST_ALLOC_EXACT "alloc_exact_samples"      /* count: samples with pi = 1 */
#define AP_ST_ALLOC_SPACE_VAR2 "alloc_space_var2"    /* ap_var2_encode units */
#define AP_ST_ALLOC_OBJECTS_VAR2 "alloc_objects_var2" /* ap_var2_encode units */
#define AP_ST_INUSE_EXACT "inuse_exact_samples"      /* count */
#define AP_ST_INUSE_SPACE_VAR2 "inuse_space_var2"
#define AP_ST_INUSE_OBJECTS_VAR2 "inuse_objects_var2"
/* Unit of the var2 types: sum of squared variance terms, ap_var2_encode'd
 * with the rate of the line (its "rate" label, else the period). */
#define AP_UNIT_VAR2 "var2_scaled"

/*
 * Comment carrying the identity of the process a dump came from
 * (ap_profile_set_process): "allocprof.process=pid=P;start=NS;boot=ID;seq=N".
 */
#define AP_COMMENT_PROCESS_PREFIX "allocprof.process="

/* Number of sample types (and values per sample) of an allocprof heap profile. */
#define AP_HEAP_NVALUES 20

/*
 * Comment prefix for a serialized histogram: "allocprof.hist.NAME=" + base64
 * (written and read by ap_profile_hist_comment_add / _decode below).
 */
#define AP_COMMENT_HIST_PREFIX "allocprof.hist."

typedef struct ap_value_type {
	int64_t type; /* string index */
	int64_t unit; /* string index */
} ap_value_type;

typedef struct ap_label {
	int64_t key;      /* string index */
	int64_t str;      /* string index, 0 when numeric */
	int64_t num;
	int64_t num_unit; /* string index, 0 when none */
} ap_label;

typedef struct ap_sample {
	uint64_t *location_ids; /* leaf first */
	size_t nlocations;
	int64_t *values; /* one per sample type */
	ap_label *labels;
	size_t nlabels;
} ap_sample;

typedef struct ap_mapping {
	uint64_t id; /* nonzero */
	uint64_t memory_start, memory_limit, file_offset;
	int64_t filename, build_id; /* string indices */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
} ap_mapping;

typedef struct ap_line {
	uint64_t function_id;
	int64_t line;
	int64_t column;
} ap_line;

typedef struct ap_location {
	uint64_t id; /* nonzero */
	uint64_t mapping_id; /* 0 = none */
	uint64_t address;
	ap_line *lines; /* innermost first; last is the outermost caller */
	size_t nlines;
	bool is_folded;
} ap_location;

typedef struct ap_function {
	uint64_t id; /* nonzero */
	int64_t name, system_name, filename; /* string indices */
	int64_t start_line;
} ap_function;

/*
 * An allocprof extension: a named blob carried in the pprof Profile
 * message's field AP_PPROF_EXT_FIELD, which pprof and other readers skip
 * as an unknown field, so what allocprof alone reads (histograms, process
 * memory, the timeline, ...) neither clutters pprof's header nor breaks
 * its parsers. Several extensions may share a name. Wire form and the
 * names in use: docs/FORMATS.md, "Extensions".
 */
#define AP_PPROF_EXT_FIELD 1000
/* Longest extension name (bytes, without the NUL). */
#define AP_PROFILE_EXT_NAME_MAX 127

typedef struct ap_profile_ext {
	const char *name;          /* NUL-terminated, 1..AP_PROFILE_EXT_NAME_MAX */
	const unsigned char *data; /* len bytes (not NUL-terminated) */
	size_t len;
} ap_profile_ext;

struct ap_profile_priv;

typedef struct ap_profile {
	ap_value_type *sample_types;
	size_t nsample_types;
	ap_sample *samples;
	size_t nsamples;
	ap_mapping *mappings;
	size_t nmappings;
	ap_location *locations;
	size_t nlocations;
	ap_function *functions;
	size_t nfunctions;
	char **strings; /* NUL-terminated; strings[0] = "" */
	size_t nstrings;
	int64_t drop_frames, keep_frames; /* string indices */
	int64_t time_nanos, duration_nanos;
	ap_value_type period_type;
	int64_t period;
	int64_t *comments; /* string indices */
	size_t ncomments;
	int64_t default_sample_type; /* string index; 0 = the last type */
	int64_t doc_url;             /* string index */
	ap_profile_ext *exts;        /* in the order added (ap_profile_ext_add) */
	size_t nexts;
	struct ap_profile_priv *priv;
} ap_profile;

/* Create an empty profile (strings = {""}). 0, AP_EINVAL or AP_ENOMEM. */
AP_API int ap_profile_create(const ap_allocator *alloc, ap_profile **out);
/* Free a profile and everything it owns. NULL is allowed. */
AP_API void ap_profile_destroy(ap_profile *p);

/* Index of s in the string table, adding it once. >= 0, or AP_ENOMEM/AP_EINVAL. */
AP_API int64_t ap_profile_intern(ap_profile *p, const char *s);
/* Same for a byte string of length n (no NUL needed; embedded NUL rejected). */
AP_API int64_t ap_profile_intern_n(ap_profile *p, const char *s, size_t n);
/* strings[i], or "" when i is out of range. Never NULL. */
AP_API const char *ap_profile_string(const ap_profile *p, int64_t i);

/* Append a sample type; returns its index (>= 0) or a negative error. */
AP_API int ap_profile_add_sample_type(ap_profile *p, const char *type,
				      const char *unit);
/* Index of the sample type named type, or AP_ENOTFOUND. */
AP_API int ap_profile_find_sample_type(const ap_profile *p, const char *type);

/* Add a copy of *m; m->id 0 = assign the next id. *id_out gets the id. */
AP_API int ap_profile_add_mapping(ap_profile *p, const ap_mapping *m,
				  uint64_t *id_out);
/* Add a copy of *f; f->id 0 = assign. */
AP_API int ap_profile_add_function(ap_profile *p, const ap_function *f,
				   uint64_t *id_out);
/* Add a location (lines copied); loc->id 0 = assign. */
AP_API int ap_profile_add_location(ap_profile *p, const ap_location *loc,
				   uint64_t *id_out);
/*
 * Add a sample: nlocs location ids (leaf first), exactly nsample_types values,
 * nlabels labels; all copied. AP_EINVAL if an id is unknown.
 */
AP_API int ap_profile_add_sample(ap_profile *p, const uint64_t *locs,
				 size_t nlocs, const int64_t *values,
				 const ap_label *labels, size_t nlabels);
/*
 * Make p an allocprof heap profile: the AP_HEAP_NVALUES AP_ST_* sample types
 * in the order listed above (Go's four first), period_type space/bytes, period R,
 * default sample type inuse_space. p must have no sample types yet.
 * 0, AP_EINVAL or AP_ENOMEM.
 */
AP_API int ap_profile_init_heap(ap_profile *p, int64_t period);

/*
 * The additive sums behind one sample of an allocprof heap profile, for one
 * view (alloc: every sampled allocation; inuse: those not freed yet). A
 * sampled allocation of size bytes drawn with probability pi (weight
 * w = 1/pi, ap_sample_info) adds objects += w, space += w * size,
 * u += size - offset (for the NB interval, allocprof/estimate.h),
 * objects_var += w^2 - w and space_var += (w^2 - w) * size^2
 * (Horvitz-Thompson variance estimates), usable += w * usable size,
 * samples += 1; freeing it subtracts
 * the same from the inuse view (docs/STATISTICS.md section 2).
 */
typedef struct ap_heap_sums {
	double objects, space, u, space_var, objects_var, usable;
	double space_var2, objects_var2; /* sums of squared variance terms
					    (ap_sample_terms_of) */
	uint64_t samples, exact;         /* exact: samples of probability 1 */
} ap_heap_sums;

/*
 * The AP_HEAP_NVALUES values of one heap profile sample, in the order
 * ap_profile_init_heap declares the sample types, from the sums of its alloc
 * and inuse views: the one writer of this layout, for the runtime and for
 * tests that build profiles. rate is the line's sampling rate (the var2
 * sums are stored in ap_var2_encode units of it); line_key identifies the
 * line (e.g. a hash of its stack, size and rate: ap_round_key) and must be
 * the same in every dump of it. Values are rounded without bias
 * (ap_round_unbiased); zero, negative (float residue of adding and
 * subtracting the same terms) and NaN sums become 0, and values beyond
 * INT64_MAX saturate. When inuse->samples is 0 (all freed) every inuse value
 * is 0.
 */
AP_API void ap_heap_sums_encode(const ap_heap_sums *alloc,
				const ap_heap_sums *inuse, double rate,
				uint64_t line_key,
				int64_t values[AP_HEAP_NVALUES]);
/*
 * Who wrote a profile: the process (pid, start time in ns since the epoch,
 * the kernel's boot id, which together name one process for good) and
 * the dump's sequence number within it. Interval and peak dumps are
 * cumulative, so several dumps of one process must not be added up; tools
 * keep the latest (highest seq) of each process.
 */
typedef struct ap_process_id {
	int64_t pid;
	uint64_t start_ns;
	char boot_id[40]; /* "" unknown; else up to 36 characters, no ';' */
	uint64_t seq;
} ap_process_id;
/* Add the identity as an AP_COMMENT_PROCESS_PREFIX comment. AP_EINVAL for
 * a boot id with ';' or '=' or longer than 39 characters; AP_ENOMEM. */
AP_API int ap_profile_set_process(ap_profile *p, const ap_process_id *id);
/* Read it back: 0, AP_ENOTFOUND (no such comment) or AP_ECORRUPT (one
 * that does not parse). Two ids name the same process when pid, start_ns
 * and boot_id agree (ap_process_same). */
AP_API int ap_profile_get_process(const ap_profile *p, ap_process_id *id);
AP_API bool ap_process_same(const ap_process_id *a, const ap_process_id *b);

/*
 * One-line reason for the last failed builder call on p ("location 7
 * references unknown mapping 3"); "" when none failed. Never NULL.
 */
AP_API const char *ap_profile_error(const ap_profile *p);
/* The allocator p was created with (never NULL). */
AP_API const ap_allocator *ap_profile_allocator(const ap_profile *p);
/* Append a comment string. */
AP_API int ap_profile_add_comment(ap_profile *p, const char *comment);
/*
 * Append an extension: name (printable ASCII, no spaces, 1 to
 * AP_PROFILE_EXT_NAME_MAX bytes) and a copy of len bytes of data (data may
 * be NULL when len is 0). 0, AP_EINVAL or AP_ENOMEM.
 */
AP_API int ap_profile_ext_add(ap_profile *p, const char *name,
			      const void *data, size_t len);
/*
 * The next extension at index >= *cursor whose name is name (or starts
 * with name when prefix is true); *cursor is set past it. Start with
 * *cursor = 0. NULL when there is none.
 */
AP_API const ap_profile_ext *ap_profile_ext_next(const ap_profile *p,
						 const char *name, bool prefix,
						 size_t *cursor);
/*
 * Size and lifetime histograms travel as extensions named
 * AP_PROFILE_HIST_EXT_PREFIX + NAME ("hist.alloc_size", "hist.lifetime_ns"),
 * data = the histogram's binary encoding (ap_hist_encode). Profiles of
 * earlier versions carried them as comments (AP_COMMENT_HIST_PREFIX, above).
 */
#define AP_PROFILE_HIST_EXT_PREFIX "hist."
/*
 * Append snap as the extension "hist.NAME"; temporaries from p's
 * allocator. name: printable ASCII without spaces, 1 to
 * AP_PROFILE_EXT_NAME_MAX - 5 bytes. 0, AP_EINVAL or AP_ENOMEM.
 */
AP_API int ap_profile_hist_add(ap_profile *p, const char *name,
			       const ap_hist_snap *snap);
/*
 * The next histogram of p from *cursor (start with 0): the "hist.*"
 * extensions in order, then the histogram comments of earlier versions,
 * so every reader sees both. 0 with *name and *snap as
 * ap_profile_hist_comment_decode gives them (alloc NULL = libc: free()
 * and ap_hist_snap_destroy); AP_ENOTFOUND when there is none left;
 * AP_ECORRUPT for a malformed one (*cursor is past it: the caller may go
 * on); AP_ENOMEM or AP_EINVAL. Several may share a name (a merge of
 * inputs that carried both forms; merge itself sums them into one).
 */
AP_API int ap_profile_hist_next(const ap_profile *p, size_t *cursor,
				const ap_allocator *alloc, char **name,
				ap_hist_snap **snap);
/*
 * Append snap as the comment "allocprof.hist.NAME=" + base64 of its binary
 * encoding (ap_hist_encode); temporaries come from p's allocator. name must
 * be non-empty and hold no '='. 0, AP_EINVAL or AP_ENOMEM.
 */
AP_API int ap_profile_hist_comment_add(ap_profile *p, const char *name,
				       const ap_hist_snap *snap);
/*
 * (The form of earlier versions; ap_profile_hist_add writes the current.)
 * Read a comment written by ap_profile_hist_comment_add. 0 with *name
 * (NUL-terminated, from alloc, size strlen + 1; NULL alloc = libc, so free()
 * releases it) and *snap (release with ap_hist_snap_destroy);
 * AP_ENOTFOUND when comment is not a histogram comment, AP_ECORRUPT when it
 * is one but malformed, AP_ENOMEM. *name and *snap are NULL on error.
 */
AP_API int ap_profile_hist_comment_decode(const char *comment,
					  const ap_allocator *alloc,
					  char **name, ap_hist_snap **snap);
/*
 * Set drop_frames to ap_profile_alloc_drop_frames, so that pprof puts the
 * bytes on the caller of malloc/operator new and of the C++ allocators
 * and containers, not on the allocator. 0, AP_EINVAL or AP_ENOMEM.
 */
AP_API int ap_profile_drop_alloc_frames(ap_profile *p);
/* The regex (RE2, whole names): allocator entry points, allocprof's
 * runtime, the C++ allocators, containers and strings, Rust's allocation
 * machinery (the alloc crate, std's collections, hashbrown, the
 * __rust_alloc shims). */
AP_API extern const char *const ap_profile_alloc_drop_frames;

/* Lookups by id, O(1) expected; NULL when absent. */
AP_API const ap_mapping *ap_profile_mapping(const ap_profile *p, uint64_t id);
AP_API const ap_location *ap_profile_location(const ap_profile *p, uint64_t id);
AP_API const ap_function *ap_profile_function(const ap_profile *p, uint64_t id);

/*
 * Check every cross reference (string indices, ids, value counts). 0 or
 * AP_ECORRUPT; when err is non-NULL a one-line reason is written to it.
 */
AP_API int ap_profile_validate(const ap_profile *p, char *err, size_t errlen);

/*
 * pprof encoding (protobuf, optionally gzip'd). *out is allocated with the
 * profile's allocator when alloc is NULL; the caller frees it with the same,
 * passing size *len + 1 (the buffer carries a trailing NUL). AP_EINVAL when
 * p does not validate.
 */
AP_API int ap_pprof_encode(const ap_profile *p, bool gzip,
			   const ap_allocator *alloc, unsigned char **out,
			   size_t *len);
/*
 * Decode a pprof profile from (buf, len); gzip input is recognised by its
 * magic bytes. 0, or AP_ECORRUPT / AP_ENOMEM / AP_ERANGE with a one-line
 * reason in err (when non-NULL). The result is validated.
 */
AP_API int ap_pprof_decode(const unsigned char *buf, size_t len,
			   const ap_allocator *alloc, ap_profile **out,
			   char *err, size_t errlen);

/*
 * Decode a heap profile in any format allocprof reads -- the one entry point
 * for reading a profile whatever its format: pprof (protobuf) or
 * jemalloc/gperftools heap text (allocprof/heapv2.h), each plain or gzip'd
 * (decompressed once, at most 1 GiB). Text is recognised by its "heap_v2/"
 * or "heap profile:" header, anything else is taken as pprof. Results and
 * errors as for ap_pprof_decode / ap_heapv2_decode; *is_text (may be NULL)
 * tells which.
 */
AP_API int ap_profile_decode_any(const unsigned char *buf, size_t len,
				 const ap_allocator *alloc, ap_profile **out,
				 bool *is_text, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_PROFILE_H */
