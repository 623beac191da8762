/*
 * errors_test.c: ap_strerror describes every code of enum ap_error with its
 * own line (none falls through to "unknown error", no two alike), and
 * anything else as "unknown error". A code added to the enum without a
 * string fails here.
 */
#include "aptest.h"

#include <string.h>

#include "allocprof/common.h"

AP_TEST(every_code_has_its_own_description)
{
	static const int codes[] = { AP_OK,	 AP_EINVAL,	 AP_ENOMEM,
				     AP_ERANGE,	 AP_ECORRUPT,	 AP_EVERSION,
				     AP_EIO,	 AP_ENOTFOUND, AP_EUNSUPPORTED,
				     AP_EBUSY };
	const int n = (int)(sizeof codes / sizeof codes[0]);
	for (int i = 0; i < n; i++) {
		const char *s = ap_strerror(codes[i]);
		AP_CHECK(s != NULL);
		AP_CHECK_MSG(strcmp(s, "unknown error") != 0, "code %d has no description",
			     codes[i]);
		for (int j = 0; j < i; j++)
			AP_CHECK_MSG(strcmp(s, ap_strerror(codes[j])) != 0,
				     "codes %d and %d share \"%s\"", codes[i], codes[j], s);
	}
	/* The codes are 0, -1, -2, ... without gaps: the next one is unknown. */
	AP_CHECK_EQ_INT(codes[n - 1], -(n - 1));
	AP_CHECK(strcmp(ap_strerror(-n), "unknown error") == 0);
	AP_CHECK(strcmp(ap_strerror(1), "unknown error") == 0);
}
