/*
 * preload_control_query_fuzz.c: libFuzzer target for the query of the
 * runtime's POST /debug/allocprof/start (control_parse_query,
 * src/preload/control.h): any bytes give 0 with a rate in [0, 2^52] or
 * AP_EINVAL, never a read outside the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/sampler.h"
#include "control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes: an overread hits the sanitizer. */
	char *q = malloc(size ? size : 1);
	if (!q)
		return 0;
	if (size)
		memcpy(q, data, size);
	uint64_t rate = 12345;
	int rc = control_parse_query(q, size, &rate);
	if (rc != 0 && rc != AP_EINVAL)
		abort();
	if (rc == 0 && rate > AP_SAMPLER_RATE_MAX)
		abort();
	free(q);
	return 0;
}
