/*
 * heapv2_fuzz.c: libFuzzer target for ap_heapv2_decode. Any input must
 * either be rejected with a reason or decode to a valid profile, which
 * must then encode as pprof and (unless its values are inconsistent,
 * e.g. bytes without objects) as heap_v2 text that decodes again.
 */
#include "allocprof/heapv2.h"
#include "allocprof/profile.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ap_profile *p = NULL, *q = NULL;
	char err[256];
	int rc = ap_heapv2_decode(data, size, NULL, &p, err, sizeof err);
	if (rc) {
		if (p || !err[0])
			abort();
		return 0;
	}
	unsigned char *pb = NULL;
	size_t pblen = 0;
	if (ap_profile_validate(p, err, sizeof err) ||
	    ap_pprof_encode(p, true, NULL, &pb, &pblen))
		abort();
	free(pb);
	char *txt = NULL;
	size_t len = 0;
	rc = ap_heapv2_encode(p, NULL, NULL, &txt, &len);
	if (rc && rc != AP_EINVAL)
		abort();
	if (!rc) {
		if (ap_heapv2_decode((const unsigned char *)txt, len, NULL, &q,
				     err, sizeof err) ||
		    q->nsamples > p->nsamples)
			abort();
		ap_profile_destroy(q);
	}
	free(txt);
	ap_profile_destroy(p);
	return 0;
}
