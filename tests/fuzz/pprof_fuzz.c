/*
 * pprof_fuzz.c: libFuzzer target for ap_pprof_decode. Any input must either
 * be rejected with a reason or decode to a valid profile; a decoded profile
 * must re-encode, and decoding that encoding must give the same bytes again
 * (encode is a fixed point after one round).
 */
#include "allocprof/profile.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ap_profile *p = NULL, *q = NULL;
	char err[256];
	int rc = ap_pprof_decode(data, size, NULL, &p, err, sizeof err);
	if (rc) {
		if (p || !err[0])
			abort(); /* failures carry a reason and no profile */
		return 0;
	}
	if (ap_profile_validate(p, err, sizeof err))
		abort();
	unsigned char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	if (ap_pprof_encode(p, false, NULL, &a, &alen) ||
	    ap_pprof_decode(a, alen, NULL, &q, err, sizeof err) ||
	    ap_pprof_encode(q, false, NULL, &b, &blen) || alen != blen ||
	    memcmp(a, b, alen) != 0)
		abort();
	free(a);
	free(b);
	ap_profile_destroy(p);
	ap_profile_destroy(q);
	return 0;
}
