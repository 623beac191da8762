/*
 * control_query.c: the query of POST /debug/allocprof/start (control.h),
 * apart from control.c so its fuzz target links without the runtime.
 */
#include <string.h>

#include "allocprof/options.h"
#include "allocprof/sampler.h"
#include "control.h"

int control_parse_query(const char *q, size_t n, uint64_t *rate)
{
	*rate = 0;
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && q[j] != '&')
			j++;
		if (j - i > 5 && memcmp(q + i, "rate=", 5) == 0) {
			uint64_t r;
			if (ap_options_parse_size(q + i + 5, j - i - 5, &r) != 0 || r == 0 ||
			    r > AP_SAMPLER_RATE_MAX)
				return AP_EINVAL;
			*rate = r;
		} else if (j > i) {
			return AP_EINVAL;
		}
		i = j + 1;
	}
	return 0;
}
