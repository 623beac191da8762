/*
 * symbolize.h: turning a profile's addresses into functions, files, lines
 * and inline frames with libdw (elfutils), in the CLI only (never in the
 * runtime). For each mapping of the profile the object file is opened (or
 * found by build ID under /usr/lib/debug/.build-id/; separate debug files
 * via build ID or .gnu_debuglink), its build ID is checked against the
 * profile's (a mismatch is reported once and that mapping's frames stay
 * unsymbolized), and each unique (file, offset) is looked up once. C++ and
 * Rust names are demangled (demangle.h).
 *
 * The result is a new profile, identical to the input but with Function and
 * Line entries filled and has_functions/has_filenames/has_line_numbers/
 * has_inline_frames set on the mappings that were symbolized: a profile
 * `go tool pprof` shows without needing the binaries.
 */
#ifndef ALLOCPROF_CLI_SYMBOLIZE_H
#define ALLOCPROF_CLI_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "allocprof/profile.h"

typedef struct sym_options {
	/* Progress on stderr when it is a terminal and the work takes > 1 s. */
	bool progress;
	/* Fail (AP_ENOTFOUND) when the main program's file (the first mapping
	 * that has sampled addresses) cannot be opened; otherwise warn. */
	bool require_main;
	/* Print warnings (missing files, build-ID mismatches) on stderr. */
	bool warn;
	/* Extra root for build-ID debug files (tests); NULL = the default. */
	const char *debug_dir;
} sym_options;

void sym_options_default(sym_options *o);

typedef struct sym_stats {
	size_t addresses;     /* unique addresses looked up */
	size_t resolved;      /* of which got a function name */
	size_t mappings_skipped; /* missing file or build-ID mismatch */
} sym_stats;

/*
 * Symbolize in: mappings already marked has_functions are left alone.
 * *out is a new profile (libc allocator). stats may be NULL. Returns 0,
 * AP_ENOMEM, or AP_ENOTFOUND with a one-line reason in err when
 * o->require_main and the main program cannot be opened.
 */
int sym_symbolize_profile(const ap_profile *in, const sym_options *o,
			  ap_profile **out, sym_stats *stats, char *err,
			  size_t errlen);

#endif
