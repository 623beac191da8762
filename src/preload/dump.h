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
 * histograms as "allocprof.hist.*" comments.
 *
 * dump_write_file encodes it (gzip'd pprof, or jeprof's heap_v2 text with
 * /proc/self/maps) and writes it to a temporary name in the target's
 * directory, mode 0600, then renames it into place, so readers never see a
 * partial profile. Failures print one line on stderr and return an error;
 * the program is never disturbed. Everything is allocated from the arena.
 */
#ifndef AP_PRELOAD_DUMP_H
#define AP_PRELOAD_DUMP_H

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
} dump_input;

/* Build the profile in the arena. 0, AP_ENOMEM or another AP_E* code. */
int dump_build_profile(const dump_input *in, ap_profile **out);

/* Build, encode and write atomically to path. 0, AP_EIO or AP_ENOMEM. */
int dump_write_file(const dump_input *in, const char *path);

/* Write (buf, len) to path through a temporary file and rename, mode 0600.
 * 0 or AP_EIO (errno kept); a message goes to stderr. */
int dump_write_atomic(const char *path, const void *buf, size_t len);

#endif
