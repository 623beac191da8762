/*
 * sample_table_test.c: the sample-table parser and lookup
 * (allocprof/sample_table.h) and the sampler's per-class slow path
 * (ap_sampler_sample_at, allocprof/sampler.h).
 *
 * Statistical checks use fixed seeds. Each compares an observed frequency
 * (or mean) with its exact value under the thinning model and accepts a
 * deviation of at most 4.5 standard errors, the SE from the binomial law
 * sqrt(p (1 - p) / n) (or from the sample variance for means). A correct
 * sampler fails one such check with probability 7e-6, so the ~20 checks
 * here fail together with probability below 2e-4; an error of the size
 * the checks are meant to catch (a probability off by 5% relative, e.g.
 * the success at the counter's offset kept unthinned or the rest of the
 * block searched at the base rate) is 10 or more SE at these n.
 */
#include "aptest.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "allocprof/sample_table.h"
#include "allocprof/sampler.h"

#define TOL 4.5

static const char good[] =
	"# a comment\n"
	"\n"
	"allocprof-sample-table 1   # version\n"
	"base 64\n"
	"class 16 64\n"
	"class 33 256   # trailing comment\r\n"
	"\tclass 1024 1048576\n";

AP_TEST(parses_a_table_and_looks_up_every_range)
{
	ap_sample_table t;
	char err[200] = "";
	AP_CHECK(ap_sample_table_parse(good, strlen(good), &t, err, sizeof err) == 0);
	AP_CHECK_EQ_U64(t.base, 64);
	AP_CHECK_EQ_U64(t.n, 3);
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, 0), 64);  /* below the first */
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, 15), 64);
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, 16), 64);
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, 32), 64);
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, 33), 256);
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, 1023), 256);
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, 1024), 1048576);
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, UINT64_MAX), 1048576);
	/* No classes: every size at the base rate. */
	AP_CHECK(ap_sample_table_parse("allocprof-sample-table 1\nbase 7", 31, &t,
				       NULL, 0) == 0);
	AP_CHECK_EQ_U64(ap_sample_table_rate(&t, 100), 7);
}

AP_TEST(rejects_bad_tables_naming_the_line)
{
	static const struct {
		const char *text, *needle;
	} bad[] = {
		{ "", "no header" },
		{ "allocprof-sample-table 2\nbase 8\n", "line 1: unsupported version" },
		{ "heap profile\n", "line 1: not a sample table" },
		{ "allocprof-sample-table 1\n", "no 'base RATE'" },
		{ "allocprof-sample-table 1\nbase 0\n", "line 2: base rate 0 outside" },
		{ "allocprof-sample-table 1\nbase 8\nclass 4 7\n", "line 3: class rate 7" },
		{ "allocprof-sample-table 1\nbase 8\nclass 4 8\nclass 4 16\n",
		  "line 4: class sizes must increase" },
		{ "allocprof-sample-table 1\nbase 8\nclass 0 8\n", "line 3: class size 0" },
		{ "allocprof-sample-table 1\nbase 8\nclass 4 8 9\n", "line 3: expected" },
		{ "allocprof-sample-table 1\nbase 8\nclass 4 1e3\n", "not a decimal" },
		{ "allocprof-sample-table 1\nbase 8\nclass 4 9007199254740992\n",
		  "outside" },
		{ "allocprof-sample-table 1\nbase 8\nrate 4\n", "line 3: expected 'class" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ap_sample_table t;
		char err[200] = "";
		int rc = ap_sample_table_parse(bad[i].text, strlen(bad[i].text), &t,
					       err, sizeof err);
		AP_CHECK_MSG(rc != 0 && strstr(err, bad[i].needle) && t.base == 0,
			     "case %zu: rc %d, err '%s'", i, rc, err);
	}
}

AP_TEST(rejects_more_classes_than_the_capacity)
{
	static char text[64 * (AP_SAMPLE_TABLE_MAX + 4)];
	size_t n = (size_t)snprintf(text, sizeof text, "allocprof-sample-table 1\nbase 2\n");
	for (int i = 1; i <= AP_SAMPLE_TABLE_MAX + 1; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "class %d 4\n", i);
	ap_sample_table t;
	char err[200] = "";
	AP_CHECK(ap_sample_table_parse(text, n, &t, err, sizeof err) == AP_ERANGE);
	AP_CHECK(strstr(err, "more than") != NULL);
}

static void sampler_at(ap_sampler *s, uint64_t rate, uint64_t seed)
{
	ap_sampler_config c;
	ap_sampler_config_default(&c);
	c.rate = rate;
	c.seed = seed;
	AP_CHECK(ap_sampler_init(s, &c) == 0);
}

/* One allocation through the fast path and, if it says so, sample_at. */
static bool alloc_at(ap_sampler *s, uint64_t z, uint64_t rate, ap_sample_info *info)
{
	if (!ap_sampler_should_sample(s, z))
		return false;
	ap_sampler_sample_at(s, z, rate, info);
	return info->count > 0;
}

static bool near(const char *what, double got, double want, double se)
{
	printf("  %-28s %.6f, exact %.6f (%+.2f SE)\n", what, got, want,
	       (got - want) / se);
	return fabs(got - want) <= TOL * se;
}

AP_TEST(thinned_inclusion_is_per_byte_sampling_at_the_class_rate)
{
	/* Base 64, class rate 256: the keep coin is 1/4. Sizes below, at and
	 * far above the rates, each alone in its own stream. */
	static const uint64_t sizes[] = { 1, 16, 100, 700, 5000 };
	const int n = 400000;
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		ap_sampler s;
		ap_sample_info info;
		uint64_t z = sizes[k];
		double p = -expm1((double)z * log1p(-1.0 / 256)), hits = 0;
		bool fields = true;
		sampler_at(&s, 64, 100 + k);
		for (int i = 0; i < n; i++) {
			if (!alloc_at(&s, z, 256, &info))
				continue;
			hits++;
			fields = fields && info.rate == 256 && info.offset < z &&
				 fabs(info.prob - p) <= 1e-12 * p &&
				 fabs(info.weight * p - 1) <= 1e-12 && !info.exact;
		}
		char what[64];
		snprintf(what, sizeof what, "P(sampled), Z = %llu", (unsigned long long)z);
		AP_CHECK(fields);
		AP_CHECK(near(what, hits / n, p, sqrt(p * (1 - p) / n)));
	}
}

AP_TEST(thinned_offsets_follow_the_class_rate)
{
	/* Given a sample, the first kept byte is at k with probability
	 * q^k (1 - q) / p, q = 1 - 1/R_c: the NB estimator's u = Z - offset
	 * must see the class rate, not the base rate. */
	const uint64_t z = 700, rc = 256;
	const int n = 400000;
	double q = 1 - 1.0 / rc, p = 1 - pow(q, (double)z), m1 = 0, m2 = 0, m4 = 0;
	double mean = 0, sq = 0, cnt = 0;
	for (uint64_t k = 0; k < z; k++) {
		double f = pow(q, (double)k) * (1 - q) / p;
		m1 += f * (double)k;
		m2 += f * (double)k * (double)k;
		m4 += f * pow((double)k, 4);
	}
	ap_sampler s;
	ap_sample_info info;
	sampler_at(&s, 32, 7);
	for (int i = 0; i < n; i++)
		if (alloc_at(&s, z, rc, &info)) {
			mean += (double)info.offset;
			sq += (double)info.offset * (double)info.offset;
			cnt++;
		}
	AP_CHECK(near("mean offset", mean / cnt, m1, sqrt((m2 - m1 * m1) / cnt)));
	AP_CHECK(near("mean squared offset", sq / cnt, m2, sqrt((m4 - m2 * m2) / cnt)));
}

AP_TEST(consecutive_allocations_of_different_classes_are_independent)
{
	/* Per-byte independence across blocks: an allocation at the base
	 * rate (Z = 40) followed by a thinned one (Z = 100, R_c = 512). The
	 * pair's joint frequencies must be the products of the marginals. */
	const int n = 400000;
	double pa = -expm1(40 * log1p(-1.0 / 64)), pb = -expm1(100 * log1p(-1.0 / 512));
	double both = 0, a = 0, b = 0;
	ap_sampler s;
	ap_sample_info info;
	sampler_at(&s, 64, 9);
	for (int i = 0; i < n; i++) {
		bool sa = alloc_at(&s, 40, 64, &info);
		bool sb = alloc_at(&s, 100, 512, &info);
		a += sa;
		b += sb;
		both += sa && sb;
	}
	AP_CHECK(near("P(first)", a / n, pa, sqrt(pa * (1 - pa) / n)));
	AP_CHECK(near("P(second)", b / n, pb, sqrt(pb * (1 - pb) / n)));
	AP_CHECK(near("P(both)", both / n, pa * pb, sqrt(pa * pb * (1 - pa * pb) / n)));
}

AP_TEST(base_rate_one_thins_every_byte)
{
	/* R = 1: every byte is a success; kept with 1/R_c = 1/4. */
	const int n = 200000;
	ap_sampler s;
	ap_sample_info info;
	double hits = 0, p = 1 - pow(0.75, 3);
	sampler_at(&s, 1, 11);
	for (int i = 0; i < n; i++)
		hits += alloc_at(&s, 3, 4, &info);
	AP_CHECK(near("P(sampled), R = 1, R_c = 4", hits / n, p, sqrt(p * (1 - p) / n)));
	AP_CHECK(alloc_at(&s, 3, 1, &info) && info.exact && info.rate == 1);
}

AP_TEST(class_rate_at_or_below_base_is_the_plain_slow_path)
{
	/* Same seed, same sizes: identical records, sample_at or sample. */
	ap_sampler s1, s2;
	ap_sample_info i1, i2;
	bool same = true;
	sampler_at(&s1, 128, 5);
	sampler_at(&s2, 128, 5);
	for (uint64_t i = 0; i < 100000; i++) {
		uint64_t z = 1 + i % 300;
		bool a = ap_sampler_should_sample(&s1, z);
		bool b = ap_sampler_should_sample(&s2, z);
		same = same && a == b;
		if (!a || !b)
			continue;
		ap_sampler_sample(&s1, z, &i1);
		ap_sampler_sample_at(&s2, z, i % 2 ? 128 : 64, &i2);
		same = same && i1.size == i2.size && i1.offset == i2.offset &&
		       i1.count == i2.count && i1.prob == i2.prob &&
		       i1.weight == i2.weight && i1.exact == i2.exact &&
		       i1.rate == i2.rate &&
		       s1.bytes_until_sample == s2.bytes_until_sample;
	}
	AP_CHECK(same);
	AP_CHECK(i1.rate == 128);
}
