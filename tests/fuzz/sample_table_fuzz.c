/*
 * sample_table_fuzz.c: libFuzzer target for the sample-table parser
 * (allocprof/sample_table.h), which the runtime runs on a user's file. No
 * input may crash it or read past the bytes given; whatever it accepts
 * must satisfy the table's invariants, and a rejected table is all zero
 * with a message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/sample_table.h"
#include "allocprof/sampler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ap_sample_table t;
	char err[128];
	/* An exact-size copy, so that reading one byte too far is caught. */
	char *text = malloc(size ? size : 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	err[0] = '\0';
	int rc = ap_sample_table_parse(text, size, &t, err, sizeof err);
	if (rc == 0) {
		if (t.base < 1 || t.base > AP_SAMPLER_RATE_MAX ||
		    t.n > AP_SAMPLE_TABLE_MAX)
			abort();
		for (size_t i = 0; i < t.n; i++)
			if (t.rate[i] < t.base || t.rate[i] > AP_SAMPLER_RATE_MAX ||
			    (i && t.min_size[i] <= t.min_size[i - 1]) ||
			    ap_sample_table_rate(&t, t.min_size[i]) != t.rate[i])
				abort();
	} else if (t.base != 0 || t.n != 0 || !memchr(err, '\0', sizeof err) ||
		   err[0] == '\0') {
		abort();
	}
	free(text);
	return 0;
}
