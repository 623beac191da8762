/*
 * diff_test.c: the difference intervals of allocprof diff and the folded
 * helpers (src/cli/diffstat.c, folded.c and text.c, from the command's
 * object library).
 * The statistical behaviour over many runs (no false alarms at the nominal
 * rate, a doubled site found) is tests/stats/diff_*_test.c.
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

static vu_side side(double bytes, double var, uint64_t samples, double lo,
		    double hi)
{
	return (vu_side){.bytes = bytes, .var_bytes = var, .samples = samples,
			 .lo = lo, .hi = hi};
}

AP_TEST(exact_sides_give_the_exact_change)
{
	vu_side b = {.bytes = 1000, .exact = true};
	vu_side n = {.bytes = 1500, .exact = true};
	vu_diff d;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK_EQ_INT(d.method, VU_EXACT);
	AP_CHECK_NEAR(d.change, 500, 0, 0);
	AP_CHECK_NEAR(d.lo, 500, 0, 0);
	AP_CHECK_NEAR(d.hi, 500, 0, 0);
	AP_CHECK(d.significant);
	n.bytes = 1000;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK(!d.significant);
}

AP_TEST(many_samples_add_the_variances)
{
	/* sd of the difference = sqrt(100 + 300) = 20; z(0.975) = 1.95996. */
	vu_side b = side(1000, 100, AP_NB_MAX_SAMPLES, 0, 0),
		n = side(1100, 300, AP_NB_MAX_SAMPLES + 50, 0, 0);
	vu_diff d;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK_EQ_INT(d.method, VU_NORMAL);
	AP_CHECK_NEAR(d.change, 100, 0, 1e-9);
	AP_CHECK_NEAR(d.lo, 100 - 1.959964 * 20, 0, 1e-4);
	AP_CHECK_NEAR(d.hi, 100 + 1.959964 * 20, 0, 1e-4);
	AP_CHECK(d.significant);
	/* A change inside the noise is not significant. */
	n.bytes = 1030;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK(!d.significant);
	/* A decrease is significant with the interval below 0. */
	n.bytes = 900;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK(d.significant && d.hi < 0);
}

AP_TEST(few_samples_combine_the_exact_intervals_conservatively)
{
	vu_side b = side(1000, 1e5, 3, 400, 2500),
		n = side(5000, 1e6, AP_NB_MAX_SAMPLES - 1, 3500, 7000);
	vu_diff d;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK_EQ_INT(d.method, VU_COMBINED);
	AP_CHECK_NEAR(d.change, 4000, 0, 0);
	AP_CHECK_NEAR(d.lo, 3500 - 2500, 0, 0);
	AP_CHECK_NEAR(d.hi, 7000 - 400, 0, 0);
	AP_CHECK(d.significant);
	/* Overlapping intervals: not significant. */
	n = side(2000, 1e5, 5, 900, 4000);
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK(!d.significant);
	/* One side with many samples still combines while the other has few. */
	b.samples = 10 * AP_NB_MAX_SAMPLES;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK_EQ_INT(d.method, VU_COMBINED);
}

AP_TEST(an_exact_side_enters_the_combination_as_a_point)
{
	vu_side b = {.bytes = 100, .exact = true, .lo = (double)NAN, .hi = (double)NAN};
	vu_side n = side(5000, 1e6, 2, 3000, 9000);
	vu_diff d;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK_EQ_INT(d.method, VU_COMBINED);
	AP_CHECK_NEAR(d.lo, 2900, 0, 0);
	AP_CHECK_NEAR(d.hi, 8900, 0, 0);
}

AP_TEST(the_point_estimate_stays_inside_the_interval)
{
	/* Sides whose own intervals exclude their estimate (rounding). */
	vu_side b = side(100, 1, 1, 101, 200), n = side(50, 1, 1, 60, 70);
	vu_diff d;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), 0);
	AP_CHECK(d.lo <= d.change && d.change <= d.hi);
}

AP_TEST(bad_levels_and_nan_inputs_are_rejected)
{
	vu_side b = side(1, 1, AP_NB_MAX_SAMPLES, 0, 2),
		n = side(2, 1, AP_NB_MAX_SAMPLES, 0, 3);
	vu_diff d;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0, &d), AP_EINVAL);
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 1, &d), AP_EINVAL);
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, (double)NAN, &d), AP_EINVAL);
	AP_CHECK(isnan(d.change));
	n.bytes = (double)NAN;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), AP_EINVAL);
	n.bytes = 2;
	n.var_bytes = -1;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), AP_EINVAL);
	n.var_bytes = 1;
	n.samples = 2;
	n.hi = (double)NAN;
	AP_CHECK_EQ_INT(vu_diff_interval(&b, &n, 0.95, &d), AP_EINVAL);
}

AP_TEST(side_level_is_the_square_root)
{
	AP_CHECK_NEAR(vu_side_level(0.95), 0.974679434480896, 1e-12, 0);
	AP_CHECK(isnan(vu_side_level(1.0)));
	AP_CHECK(isnan(vu_side_level(-0.5)));
}

AP_TEST(nothing_sampled_is_bounded_by_one_sample)
{
	/* P(no sample | N bytes) = q^N; the NB bound from one sample at the
	 * (1+L)/2 quantile is ~ R ln(2/(1-L)) = R ln 40 at L = 0.95. */
	double R = 524288;
	double u = vu_empty_upper(R, 0.95);
	AP_CHECK_NEAR(u, R * log(40.0), 1e-4, 2);
	AP_CHECK_NEAR(vu_empty_upper(1, 0.95), 0, 0, 0);
	AP_CHECK(isnan(vu_empty_upper(0.5, 0.95)));
	AP_CHECK(isnan(vu_empty_upper(R, 1.5)));
	AP_CHECK(isnan(vu_empty_upper((double)NAN, 0.95)));
}

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
