/*
 * timeline_fuzz.c: libFuzzer target for the time extensions' decoders
 * (allocprof/timeline.h). The first byte picks the layout ("timeline"/"peak"
 * when even, "lifetimes" when odd); the rest is the data. Whatever decodes
 * must re-encode to the very same bytes (the layout is canonical: shortest
 * varints, doubles as stored) and every stack index must be in range.
 * Anything else traps.
 */
#include <stdlib.h>
#include <string.h>

#include "allocprof/timeline.h"
#include "fuzz.h"

static void timeline(const uint8_t *d, size_t n)
{
	ap_timeline *tl;
	char err[200];
	if (ap_timeline_decode(d, n, NULL, &tl, err, sizeof err))
		return;
	for (size_t i = 0; i < tl->npoints; i++)
		for (size_t j = 0; j < tl->points[i].nsites; j++)
			REQUIRE(tl->points[i].sites[j].stack < tl->nstacks);
	unsigned char *enc;
	size_t len, cap;
	REQUIRE(!ap_timeline_encode(tl, NULL, &enc, &len, &cap));
	REQUIRE(len == n && !memcmp(enc, d, n));
	free(enc);
	ap_timeline_free(tl);
}

static void lifetimes(const uint8_t *d, size_t n)
{
	ap_lifetimes *lt;
	char err[200];
	if (ap_lifetimes_decode(d, n, NULL, &lt, err, sizeof err))
		return;
	for (size_t i = 0; i < lt->nsites; i++)
		REQUIRE(lt->sites[i].stack < lt->nstacks);
	unsigned char *enc;
	size_t len, cap;
	REQUIRE(!ap_lifetimes_encode(lt, NULL, &enc, &len, &cap));
	REQUIRE(len == n && !memcmp(enc, d, n));
	free(enc);
	ap_lifetimes_free(lt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		lifetimes(data + 1, size - 1);
	else
		timeline(data + 1, size - 1);
	return 0;
}
