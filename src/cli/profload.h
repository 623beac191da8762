/*
 * profload.h: reading heap profiles from files, in every format the
 * library decodes (pprof or jemalloc/gperftools heap_v2 text, each plain or
 * gzip'd), merging several into one and optionally symbolizing the result.
 * Every command that takes PROFILE arguments starts here.
 */
#ifndef ALLOCPROF_CLI_PROFLOAD_H
#define ALLOCPROF_CLI_PROFLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "allocprof/profile.h"

/*
 * Read and decode each file ("-" = stdin) with ap_profile_decode_any, then
 * merge them (profmerge.h). One file is returned as decoded. The result is
 * not symbolized. Files without alloc_space/inuse_space sample types are
 * rejected. AP_EIO for unreadable files, AP_ECORRUPT for bad ones, with a
 * one-line reason naming the file in err.
 */
int hv_load_profiles(const char *const *paths, size_t n, ap_profile **out,
		     char *err, size_t errlen);

/*
 * hv_load_profiles, then (when symbolize) symbolize the result with libdw
 * (symbolize.h, default options). Errors as for hv_load_profiles.
 */
int hv_load_symbolized(const char *const *paths, size_t n, bool symbolize,
		       ap_profile **out, char *err, size_t errlen);

#endif
