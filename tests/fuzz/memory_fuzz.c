/*
 * memory_fuzz.c: libFuzzer target for the process-memory record decoder
 * (allocprof/memory.h). Whatever decodes must encode and decode back to the
 * same record.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/memory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ap_memory m, back;
	if (ap_memory_decode(data, size, &m) != 0)
		return 0;
	char buf[4096];
	size_t len;
	if (ap_memory_encode(&m, buf, sizeof buf, &len) != 0)
		abort(); /* a decoded record always re-encodes */
	if (ap_memory_decode(buf, len, &back) != 0 || memcmp(&m, &back, sizeof m) != 0)
		abort();
	return 0;
}
