/*
 * preload_ehtrim_fuzz.c: libFuzzer target for the runtime's reading of an
 * object's unwind-table header and the walk of .eh_frame's entries
 * (ehtrim_tables_span, src/preload/ehtrim.h). The input, after two
 * little-endian 16-bit words (the header's offset in the rest, modulo its
 * size, and its length), is the segment, copied to a buffer of exactly its
 * size so that a read past it is caught (ASan). A span found must be whole
 * pages inside the segment.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ehtrim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 5)
		return 0;
	size_t off = (size_t)(data[0] | data[1] << 8);
	size_t len = (size_t)(data[2] | data[3] << 8);
	size_t n = size - 4;
	uint8_t *seg = malloc(n);
	if (!seg)
		return 0;
	memcpy(seg, data + 4, n);
	off %= n;
	uintptr_t lo = (uintptr_t)seg, hi = lo + n, a, b;
	if (ehtrim_tables_span(lo + off, len, lo, hi, &a, &b) &&
	    (a < lo || b > hi || a >= b || a % 4096 || b % 4096))
		abort();
	free(seg);
	return 0;
}
