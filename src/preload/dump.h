/*
 * dump.h: turning the runtime's tables into a heap profile file.
 *
 * dump_build_profile makes an allocprof heap profile (allocprof/profile.h:
 * Go's four heap sample types first, then the additive AP_ST_* types;
 * period = R; default sample type inuse_space) with one Mapping per
 * executable PT_LOAD segment of every loaded object (main program first,
 * real paths, GNU build IDs), one Location per distinct return address
 * (address = return address - 1: every frame we record is a call site),
 * no Function/Line (the CLI symbolizes), and the size and lifetime
 * histograms as "hist.*" extensions (allocprof/profile.h).
 *
 * dump_write_file encodes it (gzip'd pprof, or jeprof's heap_v2 text with
 * /proc/self/maps) and writes it to a temporary name in the target's
 * directory, mode 0600, then renames it into place, so readers never see a
 * partial profile. Failures print one line on stderr and return an error;
 * the program is never disturbed. Everything is allocated from the arena.
 */
#ifndef AP_PRELOAD_DUMP_H
#define AP_PRELOAD_DUMP_H

#include <limits.h>
#include <stdint.h>

#include "allocprof/profile.h"
#include "arena.h"
#include "stack_table.h"

typedef struct dump_input {
	stack_table *table;
	arena *a;
	uint64_t period;            /* R of the process */
	int format;                 /* rt_format */
	uint64_t start_realtime_ns; /* profile start, for duration_nanos */
	bool with_mappings;         /* false in tests that want no mappings */
	const char *warning;        /* NULL, or a comment "allocprof.warning=..."
				       (detect.h: the runtime saw nothing) */
	const struct ap_memory *memory; /* NULL, or the process's memory
					   (extension AP_EXT_MEMORY) */
	const char *trigger;        /* NULL, or what asked for this dump
				       (extension AP_EXT_TRIGGER) */
	bool no_file;               /* encode and call on_written only */
	/* NULL, or called with the encoded pprof body once it is written
	 * (push.h); in the dumping thread, dump lock held. */
	void (*on_written)(const void *body, size_t len, uint64_t start_ns,
			   uint64_t end_ns);
	const char *attach;         /* NULL, or "allocprof.attach=HEAP SOURCE":
				       the allocator's heap when the runtime
				       attached (attach.h) */
} dump_input;

/*
 * Before dlclose(handle): remember the executable mappings of its object
 * (path, build ID, addresses, file offsets) so that later profiles still
 * attribute samples taken in it to that file, for symbolisation, after it
 * is unmapped. Memory from a. Thread-safe; never call from a signal
 * handler. The lock functions are for fork handlers.
 */
void dump_retire_object(arena *a, void *handle);
void dump_retired_lock(void);
void dump_retired_unlock(void);
void dump_retired_reset_lock(void);

/* One executable segment of an object, as a profile's Mapping lists it. */
typedef struct dump_mapping {
	uint64_t start, limit, offset;
	char path[PATH_MAX];
	char build_id[2 * 64 + 1];
	bool resolve; /* dump.c's: path is the name as loaded, not resolved yet */
} dump_mapping;

/*
 * The mappings a profile made now would list (loaded objects, main program
 * first, then those of dlclose'd objects), in a's memory: *v (arena_free)
 * and *n. 0 or AP_ENOMEM. Thread-safe; not from a signal handler.
 */
int dump_list_mappings(arena *a, dump_mapping **v, size_t *n);

/*
 * Resolve the loaded objects' paths now, at start-up, into the cache every
 * later dump reads (dump.c): a pre-fork server's children then inherit
 * them resolved instead of each resolving them at its exit dump. Not from
 * a signal handler, nor with the loader's lock held (a constructor is
 * fine).
 */
void dump_prime_paths(arena *a);

/* Build the profile in the arena. 0, AP_ENOMEM or another AP_E* code. */
int dump_build_profile(const dump_input *in, ap_profile **out);

/* Build, encode and write atomically to path. 0, AP_EIO or AP_ENOMEM. */
int dump_write_file(const dump_input *in, const char *path);
/* p as gzip'd pprof in *out (*len bytes, from al), destroying p in every
 * case. Encoded field by field into the compressor (ap_pprof_encode with
 * gzip): the profile and zlib's state are resident together, its raw
 * encoding never is. */
int dump_encode_gzip(ap_profile *p, const ap_allocator *al,
		     unsigned char **out, size_t *len);

/* Write (buf, len) to path atomically, mode 0600: through an unnamed
 * O_TMPFILE file linked into place where the file system has them (a
 * process killed mid-write leaves nothing), else a temporary name and
 * rename. 0 or AP_EIO (errno kept); failures are reported on stderr
 * rate-limited: the first one, then a count at the 10th, 100th, ... and
 * when a write succeeds again. */
int dump_write_atomic(const char *path, const void *buf, size_t len);

/* The same for other files; what (e.g. "port file") names it in the one
 * line printed on failure (NULL: print nothing). */
int dump_write_named(const char *what, const char *path, const void *buf, size_t len);

#endif
