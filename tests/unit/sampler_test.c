/*
 * sampler_test.c: the per-byte sampler's own behaviour (allocprof/sampler.h):
 * gap laws, P(sampled) per size and gap kind, offsets, R = 1, size 0,
 * set_rate, passthrough, COUNT mode, bad arguments and huge sizes (the suite
 * runs under UBSan, so the size_t > INT64_MAX cases check the absence of
 * overflow UB too). Estimator accuracy over replications is the Monte Carlo
 * suite's job (tests/stats).
 *
 * Tolerances: each statistical check allows 5 standard errors of its
 * statistic under the exact law the sampler claims (derived next to each
 * check): a correct sampler fails with probability below 1e-6 per check,
 * and the seeds are fixed. The gap-kind checks are arranged so that the
 * other gap kind's law is tens of standard errors away, i.e. they can fail.
 */
#include "aptest.h"

#include <math.h>
#include <stdbool.h>

#include "allocprof/sampler.h"

static ap_sampler make(uint64_t rate, ap_gap_kind gap, ap_sample_mode mode,
		       bool passthrough, uint64_t seed)
{
	ap_sampler_config c = {.rate = rate, .gap = gap, .mode = mode,
			       .passthrough = passthrough, .seed = seed};
	ap_sampler s;
	int rc = ap_sampler_init(&s, &c);
	if (rc != 0)
		ap_test_fail(__FILE__, __LINE__, "ap_sampler_init: %s", ap_strerror(rc));
	return s;
}

AP_TEST(config_default_values)
{
	ap_sampler_config c;
	ap_sampler_config_default(&c);
	AP_CHECK_EQ_U64(c.rate, 524288);
	AP_CHECK(c.gap == AP_GAP_GEOMETRIC);
	AP_CHECK(c.mode == AP_SAMPLE_FIRST);
	AP_CHECK(!c.passthrough);
	AP_CHECK_EQ_U64(c.seed, 0);
	ap_sampler s;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), 0);
	AP_CHECK(s.bytes_until_sample >= 0);
	AP_CHECK_EQ_U64(s.exact_min, UINT64_MAX);
}

AP_TEST(bad_arguments_are_rejected)
{
	ap_sampler_config c;
	ap_sampler_config_default(&c);
	ap_sampler s;
	AP_CHECK_EQ_INT(ap_sampler_init(NULL, &c), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_sampler_init(&s, NULL), AP_EINVAL);
	c.rate = 0;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), AP_EINVAL);
	c.rate = AP_SAMPLER_RATE_MAX + 1;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), AP_ERANGE);
	c.rate = UINT64_MAX;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), AP_ERANGE);
	c.rate = AP_SAMPLER_RATE_MAX;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), 0);
	c.rate = 100;
	c.gap = (ap_gap_kind)7;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), AP_EINVAL);
	c.gap = AP_GAP_GEOMETRIC;
	c.mode = (ap_sample_mode)-1;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), AP_EINVAL);
	/* A failed init leaves an inert sampler, never a weight of 1/0. */
	c.rate = 0;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), AP_EINVAL);
	AP_CHECK(!ap_sampler_should_sample_pt(&s, 1u << 30));
	AP_CHECK(ap_sampler_should_sample(&s, SIZE_MAX));
	ap_sample_info info;
	ap_sampler_sample(&s, SIZE_MAX, &info);
	AP_CHECK_EQ_U64(info.count, 0);
	AP_CHECK(info.weight == 0.0);
	AP_CHECK_EQ_INT(ap_sampler_set_rate(NULL, 10), AP_EINVAL);
	AP_CHECK(isnan(ap_sampler_prob(NULL, 10)));
	AP_CHECK_EQ_U64(ap_sampler_exact_threshold(0, AP_GAP_GEOMETRIC), 0);
	AP_CHECK_EQ_U64(ap_sampler_exact_threshold(AP_SAMPLER_RATE_MAX + 1, AP_GAP_GEOMETRIC), 0);
}

AP_TEST(same_seed_samples_the_same_allocations)
{
	ap_sampler a = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 5);
	ap_sampler b = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 5);
	for (size_t i = 0; i < 100000; i++) {
		size_t z = 1 + i % 97;
		bool x = ap_sampler_should_sample(&a, z), y = ap_sampler_should_sample(&b, z);
		AP_CHECK(x == y);
		if (x) {
			ap_sample_info ia, ib;
			ap_sampler_sample(&a, z, &ia);
			ap_sampler_sample(&b, z, &ib);
			AP_CHECK_EQ_U64(ia.offset, ib.offset);
		}
	}
}

/* Sample mean and variance of n gap draws. */
static void gap_moments(ap_sampler *s, int n, double *mean, double *var, double *p0)
{
	double sum = 0, sum2 = 0, zeros = 0;
	for (int i = 0; i < n; i++) {
		double g = (double)ap_sampler_next_gap(s);
		sum += g;
		sum2 += g * g;
		zeros += g == 0;
	}
	*mean = sum / n;
	*var = (sum2 - n * *mean * *mean) / (n - 1);
	*p0 = zeros / n;
}

/*
 * A gap is the number of failures before the first success, Geometric(p)
 * on {0, 1, ...} with P(k) = q^k p. Its mean is sum k q^k p = q/p and its
 * variance q/p^2 (differentiate the geometric series twice). For the exact
 * kind p = 1/R: mean R - 1, variance R(R - 1). The exponential kind floors
 * -R ln U, which is geometric with q = e^(-1/R): mean about R - 1/2.
 *
 * Standard errors for n draws: se(mean) = sqrt(q/p^2 / n); for the sample
 * variance se = sqrt((mu4 - sigma^4) / n), and the geometric law has
 * mu4 = sigma^4 (9 + p^2/q), so se = sigma^2 sqrt((8 + p^2/q) / n).
 */
static void check_gap_law(ap_gap_kind gap, uint64_t rate, uint64_t seed)
{
	const int n = 1000000;
	ap_sampler s = make(rate, gap, AP_SAMPLE_FIRST, false, seed);
	double p = gap == AP_GAP_GEOMETRIC ? 1.0 / (double)rate : -expm1(-1.0 / (double)rate);
	double q = 1 - p;
	double want_mean = q / p, want_var = q / (p * p);
	double mean, var, p0;
	gap_moments(&s, n, &mean, &var, &p0);
	double se_mean = sqrt(want_var / n);
	double se_var = want_var * sqrt((8 + p * p / q) / n);
	double se_p0 = sqrt(p * q / n);
	AP_CHECK_MSG(fabs(mean - want_mean) <= 5 * se_mean,
		     "R=%llu gap=%d: mean %.6g, theory %.6g (se %.3g)",
		     (unsigned long long)rate, (int)gap, mean, want_mean, se_mean);
	AP_CHECK_MSG(fabs(var - want_var) <= 5 * se_var,
		     "R=%llu gap=%d: var %.6g, theory %.6g (se %.3g)",
		     (unsigned long long)rate, (int)gap, var, want_var, se_var);
	AP_CHECK_MSG(fabs(p0 - p) <= 5 * se_p0, "R=%llu gap=%d: P(0) %.6g, theory %.6g",
		     (unsigned long long)rate, (int)gap, p0, p);
}

/* R = 2 separates the kinds: geometric mean 1, var 2, P(0) = 0.5;
 * exponential mean 1.54, var 3.92, P(0) = 0.39 (se of the means ~0.002). */
AP_TEST(geometric_gap_mean_and_variance_r2)
{
	check_gap_law(AP_GAP_GEOMETRIC, 2, 11);
}

AP_TEST(exponential_gap_mean_and_variance_r2)
{
	check_gap_law(AP_GAP_EXPONENTIAL, 2, 12);
}

AP_TEST(geometric_gap_mean_and_variance_r1000)
{
	check_gap_law(AP_GAP_GEOMETRIC, 1000, 13);
}

AP_TEST(exponential_gap_mean_and_variance_r1000)
{
	check_gap_law(AP_GAP_EXPONENTIAL, 1000, 14);
}

AP_TEST(geometric_gap_mean_and_variance_default_rate)
{
	check_gap_law(AP_GAP_GEOMETRIC, AP_SAMPLER_DEFAULT_RATE, 15);
}

AP_TEST(gap_at_max_rate_stays_below_cap)
{
	ap_sampler s = make(AP_SAMPLER_RATE_MAX, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 3);
	for (int i = 0; i < 1000; i++) {
		uint64_t g = ap_sampler_next_gap(&s);
		AP_CHECK(g <= AP_SAMPLER_GAP_MAX);
	}
}

/*
 * Feed n allocations of size z, FIRST mode. Each allocation is sampled
 * independently with probability pi(z): the counter at its start is
 * geometric whatever happened before (memorylessness), so the count of
 * sampled allocations is Binomial(n, pi), se = sqrt(pi (1 - pi) / n).
 */
static void check_sampled_fraction(ap_gap_kind gap, uint64_t rate, size_t z, double want_pi)
{
	const int n = 200000;
	ap_sampler s = make(rate, gap, AP_SAMPLE_FIRST, false, 77 + (uint64_t)gap);
	AP_CHECK_NEAR(ap_sampler_prob(&s, z), want_pi, 1e-12, 0);
	int hits = 0;
	for (int i = 0; i < n; i++) {
		if (ap_sampler_should_sample(&s, z)) {
			ap_sample_info info;
			ap_sampler_sample(&s, z, &info);
			AP_CHECK_EQ_U64(info.count, 1);
			AP_CHECK(info.offset < z);
			AP_CHECK(info.weight == 1.0 / info.prob);
			AP_CHECK(!info.exact);
			hits++;
		}
	}
	double se = sqrt(want_pi * (1 - want_pi) / n);
	AP_CHECK_MSG(fabs(hits / (double)n - want_pi) <= 5 * se,
		     "gap=%d R=%llu z=%zu: sampled %.5f, pi %.5f (se %.2g)", (int)gap,
		     (unsigned long long)rate, z, hits / (double)n, want_pi, se);
}

/* R = 4, z = 3: geometric pi = 1 - (3/4)^3 = 0.578; exponential pi =
 * 1 - e^(-3/4) = 0.528. se = 0.0011, so each kind is ~45 se from the other's
 * pi: ap_sampler_prob must describe the draw actually used. */
AP_TEST(sampled_fraction_matches_pi_geometric)
{
	check_sampled_fraction(AP_GAP_GEOMETRIC, 4, 3, 1 - 27.0 / 64);
}

AP_TEST(sampled_fraction_matches_pi_exponential)
{
	check_sampled_fraction(AP_GAP_EXPONENTIAL, 4, 3, -expm1(-0.75));
}

AP_TEST(sampled_fraction_matches_pi_large_rate)
{
	check_sampled_fraction(AP_GAP_GEOMETRIC, 65536, 4096, -expm1(4096 * log1p(-1.0 / 65536)));
}

/*
 * Given that an allocation of size z is sampled, the offset is the counter
 * at its start conditioned on being < z: a geometric truncated to [0, z),
 * P(k) ∝ q^k, mean q/p - z q^z / (1 - q^z). With z = R = 4096 that is
 * ~1673 (uniform would be 2047.5). se = sd / sqrt(samples), sd <= z/sqrt(12).
 */
AP_TEST(offset_is_truncated_geometric_within_size)
{
	const uint64_t r = 4096;
	const size_t z = 4096;
	ap_sampler s = make(r, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 31);
	double p = 1.0 / r, q = 1 - p, qz = pow(q, (double)z);
	double want = q / p - (double)z * qz / (1 - qz);
	double sum = 0, sum2 = 0;
	int k = 0;
	for (int i = 0; i < 200000; i++) {
		if (!ap_sampler_should_sample(&s, z))
			continue;
		ap_sample_info info;
		ap_sampler_sample(&s, z, &info);
		AP_CHECK(info.offset < z);
		sum += (double)info.offset;
		sum2 += (double)info.offset * (double)info.offset;
		k++;
	}
	double mean = sum / k, sd = sqrt(sum2 / k - mean * mean);
	AP_CHECK(k > 100000);
	AP_CHECK_NEAR(mean, want, 0, 5 * sd / sqrt(k));
}

AP_TEST(counter_boundary_is_exact)
{
	/* bytes_until_sample = c means bytes 0..c-1 fail and byte c succeeds:
	 * an allocation of c bytes is not sampled and leaves 0; the next byte
	 * is the success, at offset 0. */
	ap_sampler s = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 8);
	s.bytes_until_sample = 50;
	AP_CHECK(!ap_sampler_should_sample(&s, 50));
	AP_CHECK_EQ_INT(s.bytes_until_sample, 0);
	AP_CHECK(ap_sampler_should_sample(&s, 1));
	AP_CHECK_EQ_INT(s.bytes_until_sample, 0); /* untouched on true */
	ap_sample_info info;
	ap_sampler_sample(&s, 1, &info);
	AP_CHECK_EQ_U64(info.offset, 0);
	AP_CHECK_EQ_U64(info.count, 1);
	s.bytes_until_sample = 50;
	AP_CHECK(ap_sampler_should_sample(&s, 51));
	ap_sampler_sample(&s, 51, &info);
	AP_CHECK_EQ_U64(info.offset, 50);
}

AP_TEST(sample_without_fast_path_charges_unsampled_bytes)
{
	ap_sampler s = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 8);
	s.bytes_until_sample = 100;
	ap_sample_info info;
	ap_sampler_sample(&s, 60, &info);
	AP_CHECK_EQ_U64(info.count, 0);
	AP_CHECK(info.weight == 0.0);
	AP_CHECK_EQ_INT(s.bytes_until_sample, 40);
}

AP_TEST(rate_one_samples_everything_with_weight_one)
{
	for (int g = 0; g < 2; g++) {
		for (int m = 0; m < 2; m++) {
			ap_sampler s = make(1, (ap_gap_kind)g, (ap_sample_mode)m, false, 9);
			AP_CHECK_EQ_INT(s.bytes_until_sample, 0);
			for (size_t z = 1; z < 3000; z += 7) {
				AP_CHECK(ap_sampler_should_sample(&s, z));
				ap_sample_info info;
				ap_sampler_sample(&s, z, &info);
				AP_CHECK_EQ_U64(info.offset, 0);
				AP_CHECK_EQ_U64(info.count, m == AP_SAMPLE_COUNT ? z : 1);
				AP_CHECK(info.weight == 1.0);
				AP_CHECK(info.prob == 1.0);
				AP_CHECK(info.exact);
				AP_CHECK_EQ_INT(s.bytes_until_sample, 0);
			}
			AP_CHECK(!ap_sampler_should_sample(&s, 0));
		}
	}
}

AP_TEST(size_zero_is_never_sampled)
{
	ap_sampler s = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, true, 10);
	s.bytes_until_sample = 0; /* the very next byte would be a success */
	for (int i = 0; i < 100; i++) {
		AP_CHECK(!ap_sampler_should_sample(&s, 0));
		AP_CHECK(!ap_sampler_should_sample_pt(&s, 0));
	}
	AP_CHECK_EQ_INT(s.bytes_until_sample, 0);
	ap_sample_info info;
	ap_sampler_sample(&s, 0, &info);
	AP_CHECK_EQ_U64(info.count, 0);
	AP_CHECK(info.prob == 0.0);
	AP_CHECK(ap_sampler_prob(&s, 0) == 0.0);
}

AP_TEST(set_rate_changes_the_law_and_validates)
{
	ap_sampler s = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, true, 12);
	uint64_t old_exact = s.exact_min;
	AP_CHECK_EQ_INT(ap_sampler_set_rate(&s, 0), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_sampler_set_rate(&s, AP_SAMPLER_RATE_MAX + 1), AP_ERANGE);
	AP_CHECK_EQ_U64(s.rate, 1000); /* unchanged on error */
	AP_CHECK_EQ_U64(s.exact_min, old_exact);
	AP_CHECK_EQ_INT(ap_sampler_set_rate(&s, 4), 0);
	AP_CHECK_EQ_U64(s.rate, 4);
	AP_CHECK_EQ_U64(s.exact_min, ap_sampler_exact_threshold(4, AP_GAP_GEOMETRIC));
	AP_CHECK(s.bytes_until_sample >= 0 && s.bytes_until_sample < 200);
	/* The new law: fraction of 1-byte allocations sampled = 1/4,
	 * se = sqrt(3/16 / 1e5) = 1.37e-3. */
	int hits = 0;
	for (int i = 0; i < 100000; i++) {
		if (ap_sampler_should_sample_pt(&s, 1)) {
			ap_sample_info info;
			ap_sampler_sample(&s, 1, &info);
			hits++;
		}
	}
	AP_CHECK_NEAR(hits / 1e5, 0.25, 0, 5 * 1.37e-3);
	AP_CHECK_EQ_INT(ap_sampler_set_rate(&s, 1), 0);
	AP_CHECK(ap_sampler_should_sample_pt(&s, 1));
}

AP_TEST(passthrough_threshold_values)
{
	/* 1 - 2^-Z > 0.99 first at Z = 7 (2^-6 = 0.0156, 2^-7 = 0.0078);
	 * 1 - e^(-Z/2) > 0.99 first at Z = 10 (2 ln 100 = 9.21). */
	AP_CHECK_EQ_U64(ap_sampler_exact_threshold(2, AP_GAP_GEOMETRIC), 7);
	AP_CHECK_EQ_U64(ap_sampler_exact_threshold(2, AP_GAP_EXPONENTIAL), 10);
	AP_CHECK_EQ_U64(ap_sampler_exact_threshold(1, AP_GAP_GEOMETRIC), 1);
	AP_CHECK_EQ_U64(ap_sampler_exact_threshold(1, AP_GAP_EXPONENTIAL), 1);
	const uint64_t rates[] = {3, 100, 4096, 524288, 1u << 30, AP_SAMPLER_RATE_MAX};
	for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
		for (int g = 0; g < 2; g++) {
			uint64_t r = rates[i];
			uint64_t t = ap_sampler_exact_threshold(r, (ap_gap_kind)g);
			/* the first size whose sampling probability, as the
			 * sampler itself computes it (without passthrough),
			 * exceeds 0.99: agreement to the last unit */
			ap_sampler s = make(r, (ap_gap_kind)g, AP_SAMPLE_FIRST, false, 1);
			AP_CHECK(ap_sampler_prob(&s, t) > 0.99);
			AP_CHECK(ap_sampler_prob(&s, t - 1) <= 0.99);
			/* ~ R ln 100 = 4.605 R for large R */
			if (r >= 4096)
				AP_CHECK_NEAR((double)t, (double)r * log(100.0), 1e-3, 0);
		}
	}
}

AP_TEST(passthrough_records_large_sizes_exactly_without_trials)
{
	ap_sampler s = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, true, 13);
	uint64_t t = s.exact_min;
	AP_CHECK_EQ_U64(t, ap_sampler_exact_threshold(1000, AP_GAP_GEOMETRIC));
	AP_CHECK(ap_sampler_prob(&s, t) == 1.0);
	AP_CHECK(ap_sampler_prob(&s, t - 1) < 0.99);
	for (int i = 0; i < 1000; i++) {
		int64_t before = s.bytes_until_sample;
		AP_CHECK(ap_sampler_should_sample_pt(&s, t + (size_t)i));
		ap_sample_info info;
		ap_sampler_sample(&s, t + (size_t)i, &info);
		AP_CHECK(info.exact);
		AP_CHECK(info.weight == 1.0 && info.prob == 1.0);
		AP_CHECK_EQ_U64(info.count, 1);
		AP_CHECK_EQ_U64(info.offset, 0);
		AP_CHECK_EQ_INT(s.bytes_until_sample, before);
	}
	/* Just below the threshold: the ordinary per-byte path. */
	s.bytes_until_sample = (int64_t)t; /* t - 1 bytes do not reach it */
	AP_CHECK(!ap_sampler_should_sample_pt(&s, t - 1));
	AP_CHECK_EQ_INT(s.bytes_until_sample, 1);
	/* Passthrough off: no exact records, even for huge sizes. */
	ap_sampler off = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 13);
	AP_CHECK(ap_sampler_should_sample_pt(&off, 100000));
	ap_sample_info info;
	ap_sampler_sample(&off, 100000, &info);
	AP_CHECK(!info.exact);
	AP_CHECK(info.offset < 100000);
}

/*
 * COUNT mode: the successes over a stream are the successes of its Bernoulli
 * trials (nothing is skipped), so over n allocations of z bytes the total
 * count is Binomial(n z, p): mean n z p, sd sqrt(n z p q). Per allocation
 * E[count] = z p = z/R, and the weight count / (p z) averages to 1 per
 * allocation (its sum estimates n).
 */
static void check_count_mode(ap_gap_kind gap, uint64_t rate, size_t z, int n, uint64_t seed)
{
	ap_sampler s = make(rate, gap, AP_SAMPLE_COUNT, false, seed);
	double p = s.byte_p, total = 0, wsum = 0, sum2 = 0;
	for (int i = 0; i < n; i++) {
		if (!ap_sampler_should_sample(&s, z))
			continue;
		ap_sample_info info;
		ap_sampler_sample(&s, z, &info);
		AP_CHECK(info.count >= 1);
		AP_CHECK(info.offset < z);
		AP_CHECK_NEAR(info.weight, (double)info.count / (p * (double)z), 1e-12, 0);
		total += (double)info.count;
		sum2 += (double)info.count * (double)info.count;
		wsum += info.weight;
	}
	double mean = (double)n * (double)z * p, sd = sqrt(mean * (1 - p));
	AP_CHECK_MSG(fabs(total - mean) <= 5 * sd, "COUNT z=%zu R=%llu: total %.0f, theory %.0f (sd %.1f)",
		     z, (unsigned long long)rate, total, mean, sd);
	/* sum of weights = total / (p z): same relative tolerance. */
	AP_CHECK_NEAR(wsum, n, 0, 5 * sd / (p * (double)z));
	/* Per-allocation variance z p q. The relative se of a sample variance
	 * is sqrt((2 + kappa) / n), kappa the excess kurtosis, for the binomial
	 * (1 - 6pq) / (zpq). Checked where the count is not mostly 0 or 1. */
	if ((double)z * p >= 5) {
		double v = (double)z * p * (1 - p);
		double var = (sum2 - total * total / n) / (n - 1);
		double kappa = (1 - 6 * p * (1 - p)) / v;
		AP_CHECK_NEAR(var, v, 5 * sqrt((2 + kappa) / n), 0);
	}
}

AP_TEST(count_mode_expected_count_is_size_over_rate)
{
	check_count_mode(AP_GAP_GEOMETRIC, 1000, 5000, 20000, 41);
	check_count_mode(AP_GAP_GEOMETRIC, 1000, 300, 100000, 42);
	check_count_mode(AP_GAP_EXPONENTIAL, 10, 77, 20000, 43);
}

AP_TEST(count_mode_large_allocations_use_binomial_draw)
{
	/* z p = 1e4 > 1024 expected successes: the O(1) normal draw. */
	check_count_mode(AP_GAP_GEOMETRIC, 1000, 10000000, 4000, 44);
}

AP_TEST(skip_and_redraw_keep_the_counter_valid)
{
	ap_sampler s = make(1000, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 14);
	s.bytes_until_sample = 500;
	ap_sampler_skip(&s, 200);
	AP_CHECK_EQ_INT(s.bytes_until_sample, 300);
	ap_sampler_skip(&s, 300);
	AP_CHECK_EQ_INT(s.bytes_until_sample, 0);
	ap_sampler_skip(&s, UINT64_MAX);
	AP_CHECK(s.bytes_until_sample >= 0);
	ap_sampler_redraw(&s);
	AP_CHECK(s.bytes_until_sample >= 0 && (uint64_t)s.bytes_until_sample <= AP_SAMPLER_GAP_MAX);
}

AP_TEST(huge_sizes_are_sampled_without_overflow)
{
	const size_t sizes[] = {SIZE_MAX, (size_t)INT64_MAX + 1, (size_t)INT64_MAX,
				(size_t)AP_SAMPLER_GAP_MAX + 1};
	for (int m = 0; m < 2; m++) {
		for (int pt = 0; pt < 2; pt++) {
			for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
				ap_sampler s = make(AP_SAMPLER_DEFAULT_RATE, AP_GAP_GEOMETRIC,
						    (ap_sample_mode)m, pt, 15 + i);
				int64_t before = s.bytes_until_sample;
				AP_CHECK(ap_sampler_should_sample(&s, sizes[i]));
				AP_CHECK(ap_sampler_should_sample_pt(&s, sizes[i]));
				AP_CHECK_EQ_INT(s.bytes_until_sample, before);
				ap_sample_info info;
				ap_sampler_sample(&s, sizes[i], &info);
				AP_CHECK_EQ_U64(info.size, sizes[i]);
				AP_CHECK(info.count >= 1);
				AP_CHECK(info.exact == (pt != 0));
				AP_CHECK(info.offset == (pt ? 0 : (uint64_t)before));
				AP_CHECK(info.prob == 1.0);
				AP_CHECK(isfinite(info.weight) && info.weight > 0);
				/* pi = 1 in double, so the HT weight of the one object is 1
				 * (FIRST), and count R / size ~ 1 (COUNT). */
				AP_CHECK_NEAR(info.weight, 1.0, 1e-3, 0);
				AP_CHECK(s.bytes_until_sample >= 0);
				AP_CHECK((uint64_t)s.bytes_until_sample <= AP_SAMPLER_GAP_MAX);
			}
		}
	}
}

/*
 * The rate cap (issue 12, item 7): the uniform behind a gap has 53 bits,
 * so near U = 1 consecutive draws are R 2^-53 bytes of gap apart. At the
 * old cap 2^56 the second-largest uniform, 1 - 2^-53, already gives a gap
 * of 8 bytes (gaps 1..7 could never be drawn); at 2^52 it gives 0, so
 * P(gap = 0) = 2 * 2^-53 = 1/R exactly. Rates above 2^52 are refused.
 */
AP_TEST(rate_is_capped_where_53_bit_uniforms_distort_the_gap)
{
	double u2 = 1.0 - 0x1.0p-53;
	AP_CHECK_EQ_U64((uint64_t)(log(u2) / log1p(-0x1.0p-56)), 8);
	AP_CHECK_EQ_U64((uint64_t)(log(u2) / log1p(-0x1.0p-52)), 0);
	AP_CHECK_EQ_U64(AP_SAMPLER_RATE_MAX, (uint64_t)1 << 52);
	ap_sampler s = make(4096, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 5);
	AP_CHECK_EQ_INT(ap_sampler_set_rate(&s, ((uint64_t)1 << 52) + 1), AP_ERANGE);
	AP_CHECK_EQ_INT(ap_sampler_set_rate(&s, (uint64_t)1 << 53), AP_ERANGE);
	AP_CHECK_EQ_U64(s.rate, 4096);
	AP_CHECK_EQ_INT(ap_sampler_set_rate(&s, (uint64_t)1 << 52), 0);
	AP_CHECK_EQ_U64(s.rate, (uint64_t)1 << 52);
}
