/*
 * allocprof/heapv2.h: jemalloc's heap_v2 text profile format (read by jeprof),
 * written from and read into an allocprof heap profile (allocprof/profile.h).
 *
 * Values: allocprof profiles hold unbiased values; jeprof re-unbiases every
 * counts line by 1 / (1 - exp(-avg/R)). The encoder writes each line through
 * ap_jeprof_transform() (allocprof/estimate.h, STATISTICS.md section 3) so
 * that jeprof prints the unbiased values again, and the decoder applies
 * jeprof's own scaling, so decode(encode(p)) gives p's values back to within
 * the transform's integer rounding.
 *
 * Addresses: allocprof (pprof convention) stores caller frames as return
 * address - 1; heap_v2 stores raw return addresses and its readers subtract
 * 1 from every frame but the first. The encoder therefore writes address + 1
 * for every frame but the leaf, and the decoder subtracts it again.
 */
#ifndef ALLOCPROF_HEAPV2_H
#define ALLOCPROF_HEAPV2_H

#include <stdbool.h>
#include <stddef.h>

#include "allocprof/common.h"
#include "allocprof/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write p as heap_v2 text: "heap_v2/R" (R = p->period, must be > 0), the
 * total line, one "@ addr..." stack and "t*:" counts line per sample with a
 * non-zero value (inuse objects/space, then alloc objects/space, taken from
 * the sample types named AP_ST_INUSE_OBJECTS etc.; at least one of
 * inuse_space and alloc_space must exist), then "MAPPED_LIBRARIES:" and
 * maps_text (the target's /proc/PID/maps). maps_text NULL = lines
 * synthesised from p's mappings. *out is NUL-terminated, allocated from
 * alloc (NULL = p's allocator) with size *len + 1. AP_EINVAL for a profile
 * that is not a heap profile, has negative values or objects 0 with bytes
 * > 0; AP_ENOMEM; AP_ERANGE.
 */
AP_API int ap_heapv2_encode(const ap_profile *p, const char *maps_text,
			    const ap_allocator *alloc, char **out, size_t *len);

/*
 * Read a heap profile in text form: jemalloc's heap_v2 ("heap_v2/R"
 * header, "@" stacks, "t*:" lines) or gperftools' ("heap profile: ... @
 * heap_v2/R", or unsampled "@ heapprofile"), optionally gzip'd. The result
 * has Go's four heap sample types (alloc_objects, alloc_space,
 * inuse_objects, inuse_space), period R, one location per distinct adjusted
 * address, one sample per stack with numeric label "bytes" = the average
 * object size, values unbiased as jeprof would print them, and one mapping
 * per executable MAPPED_LIBRARIES line with a path. 0, or AP_ECORRUPT /
 * AP_EUNSUPPORTED (heap v1 sampling) / AP_ENOMEM / AP_ERANGE with a one-line
 * reason in err when non-NULL.
 */
AP_API int ap_heapv2_decode(const unsigned char *buf, size_t len,
			    const ap_allocator *alloc, ap_profile **out,
			    char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_HEAPV2_H */
