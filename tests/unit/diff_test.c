/*
 * diff_test.c: the folded helpers (src/cli/folded.c and text.c, from the
 * command's object library). allocprof diff's tests are the library's
 * (tests/unit/difftest_test.c); the command's wiring is checked through
 * the CLI by tests/integration/diff_honest_test.sh and over many runs by
 * tests/stats/diff_*_test.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "diffstat.h"
#include "folded.h"
#include "text.h"

#include "allocprof/common.h"
#include "allocprof/estimate.h"

#include <stdlib.h>
#include <string.h>

#include "aptest.h"

static char *frame_string(const char *name, bool first)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	txt_folded_frame(f, name, first);
	fclose(f);
	return buf;
}

AP_TEST(folded_frames_cannot_break_the_line_grammar)
{
	struct {
		const char *in;
		bool first;
		const char *want;
	} cases[] = {
		{"main", true, "main"},
		{"a;b", false, "a:b"},
		{"new\nline\r", false, "new?line?"},
		{"", false, "[unknown]"},
		{NULL, true, "[unknown]"},
		{"  lead", true, "lead"},
		{"  lead", false, "  lead"},
		{"   ", true, "[unknown]"},
		{"operator new(unsigned long)", false,
		 "operator new(unsigned long)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = frame_string(cases[i].in, cases[i].first);
		AP_CHECK(s);
		int ok = !strcmp(s, cases[i].want);
		AP_CHECK_MSG(ok, "case %zu: got '%s' want '%s'", i, s,
			     cases[i].want);
		free(s);
	}
}

AP_TEST(rounded_weights_keep_the_total)
{
	double in[] = {0.4, 0.4, 0.4, 0.4, 0.4, 1e9 + 0.5, 2.6, (double)NAN, -5, 0};
	size_t n = sizeof in / sizeof in[0];
	uint64_t out[sizeof in / sizeof in[0]];
	folded_round_weights(in, n, out);
	uint64_t sum = 0;
	double exact = 0;
	for (size_t i = 0; i < n; i++) {
		sum += out[i];
		double x = in[i] > 0 ? in[i] : 0;
		exact += x;
		AP_CHECK_MSG(fabs((double)out[i] - x) < 1.0,
			     "weight %zu: %g -> %llu", i, in[i],
			     (unsigned long long)out[i]);
	}
	AP_CHECK_EQ_U64(sum, (uint64_t)floor(exact + 0.5));
	/* Five weights of 0.4 are 2 in total, not 0 each. */
	AP_CHECK_EQ_U64(out[0] + out[1] + out[2] + out[3] + out[4], 2);
	AP_CHECK_EQ_U64(out[7], 0);
	AP_CHECK_EQ_U64(out[8], 0);
}
