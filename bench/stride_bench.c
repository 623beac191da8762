/*
 * stride_bench.c: simulations behind the accuracy suite (bench/suites/
 * accuracy.sh). No program is profiled here: allocation streams are fed to
 * samplers directly, so thousands of replications take seconds.
 *
 *   stride_bench stride REPS   a periodic allocation pattern sampled by a
 *       fixed-stride sampler (one sample every 100 KiB of allocation, the
 *       event .NET's AllocationTick raises) and by allocprof's per-byte
 *       random sampler at the same mean interval (include/allocprof/
 *       sampler.h, estimates and intervals from estimate.h).
 *   stride_bench curve REPS MAXS   error and interval coverage of
 *       allocprof's estimate against the expected number of samples s, for
 *       small objects, where theory says relative sd ~ 1/sqrt(s).
 *
 * Output: one JSON object per line (read by bench/lib/accuracy_tables.py).
 *
 * Why the stride is biased (STATISTICS.md section 1): the pattern below
 * repeats every 102400 bytes, exactly the stride, so every tick lands at the
 * same offset in the pattern and is charged to the same site on every
 * iteration: with the counter starting at the stride, as AllocationTick's
 * does, one site gets all the bytes and the other none, however long the
 * program runs. Even a random starting phase only makes each run all-or-
 * nothing; its error never shrinks. Per-byte random sampling cannot lock on
 * to a period: its estimate is unbiased for any pattern ([R4]).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in lib/bench_util.h */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/estimate.h"
#include "allocprof/prng.h"
#include "allocprof/sampler.h"
#include "lib/bench_util.h"

#define STRIDE 102400u /* .NET AllocationTick: every ~100 KB */
#define LEVEL 0.95

/* The periodic pattern: per iteration 4 x 16 KiB from site 0 ("frames"),
 * then 9 x 4 KiB from site 1 ("buffers"): 65536 + 36864 = 102400 bytes. */
static const struct {
	const char *name;
	uint64_t size;
	int count;
} pattern[] = {{"frames_16k", 16384, 4}, {"buffers_4k", 4096, 9}};
#define NSITES 2
#define ITERS 2000 /* 204.8 MB per run: ~2000 samples at R = 102400 */

/* Per-site accumulators of allocprof's estimate for one run. */
struct site_est {
	ap_ht ht;
	double u; /* sum of (size - offset) over samples: the NB statistic */
};

/* Running moments of relative errors over replications. */
struct err_stats {
	double sum, sum2, abs_sum;
	long covered, n;
};

static void err_add(struct err_stats *e, double est, double truth, bool covered)
{
	double r = est / truth - 1.0;
	e->sum += r;
	e->sum2 += r * r;
	e->abs_sum += fabs(r);
	e->covered += covered;
	e->n++;
}

/* Emits the common fields: mean relative error (bias), RMS, mean |error|. */
static void err_print(const struct err_stats *e)
{
	double n = (double)e->n;
	printf("\"bias\":%.6g,\"rms\":%.6g,\"mean_abs\":%.6g", e->sum / n, sqrt(e->sum2 / n),
	       e->abs_sum / n);
}

/* Fixed-stride sampler over the pattern; returns estimated bytes per site.
 * counter0 is the bytes left before the first tick (AllocationTick: the
 * whole stride). A tick is charged to the allocation that crosses it. */
static void run_stride(uint64_t counter0, double est[NSITES])
{
	int64_t left = (int64_t)counter0;
	memset(est, 0, NSITES * sizeof *est);
	for (int it = 0; it < ITERS; it++)
		for (int s = 0; s < NSITES; s++)
			for (int k = 0; k < pattern[s].count; k++) {
				left -= (int64_t)pattern[s].size;
				while (left <= 0) {
					est[s] += STRIDE;
					left += STRIDE;
				}
			}
}

static int run_allocprof(uint64_t seed, struct site_est est[NSITES])
{
	ap_sampler_config c;
	ap_sampler sm;
	ap_sampler_config_default(&c);
	c.rate = STRIDE;
	c.seed = seed;
	if (ap_sampler_init(&sm, &c))
		return -1;
	memset(est, 0, NSITES * sizeof *est);
	for (int it = 0; it < ITERS; it++)
		for (int s = 0; s < NSITES; s++)
			for (int k = 0; k < pattern[s].count; k++) {
				size_t z = (size_t)pattern[s].size;
				if (!ap_sampler_should_sample(&sm, z))
					continue;
				ap_sample_info info;
				ap_sampler_sample(&sm, z, &info);
				ap_ht_add(&est[s].ht, (double)z, info.prob);
				est[s].u += (double)(info.size - info.offset);
			}
	return 0;
}

/* The interval allocprof reports for a site (NB below 100 samples, HT above). */
static bool covers(const struct site_est *e, double rate, double truth)
{
	ap_interval iv;
	if (ap_bytes_interval(e->ht.samples, e->u, rate, e->ht.bytes, e->ht.var_bytes, LEVEL,
			      &iv, NULL))
		return false;
	return iv.lo <= truth && truth <= iv.hi;
}

static int cmd_stride(long reps)
{
	double truth[NSITES], fixed[NSITES], est[NSITES];
	struct err_stats phase[NSITES] = {0}, ap[NSITES] = {0};
	struct site_est se[NSITES];
	double samples[NSITES] = {0};
	ap_prng r;
	ap_prng_seed(&r, 7);
	for (int s = 0; s < NSITES; s++)
		truth[s] = (double)ITERS * (double)pattern[s].count * (double)pattern[s].size;
	run_stride(STRIDE, fixed);
	for (long rep = 0; rep < reps; rep++) {
		run_stride(1 + ap_prng_below(&r, STRIDE), est);
		if (run_allocprof((uint64_t)rep + 1, se)) {
			fprintf(stderr, "stride_bench: sampler init failed\n");
			return 2;
		}
		for (int s = 0; s < NSITES; s++) {
			err_add(&phase[s], est[s], truth[s], false);
			err_add(&ap[s], se[s].ht.bytes, truth[s], covers(&se[s], STRIDE, truth[s]));
			samples[s] += (double)se[s].ht.samples;
		}
	}
	for (int s = 0; s < NSITES; s++) {
		printf("{\"kind\":\"stride\",\"site\":\"%s\",\"size\":%llu,\"per_iter\":%d,"
		       "\"iters\":%d,\"stride\":%u,\"reps\":%ld,\"truth\":%.0f,",
		       pattern[s].name, (unsigned long long)pattern[s].size, pattern[s].count,
		       ITERS, STRIDE, reps, truth[s]);
		printf("\"stride_fixed\":{\"estimate\":%.0f,\"rel_err\":%.6g},", fixed[s],
		       fixed[s] / truth[s] - 1.0);
		printf("\"stride_random_phase\":{");
		err_print(&phase[s]);
		printf("},\"allocprof\":{");
		err_print(&ap[s]);
		printf(",\"coverage\":%.6g,\"mean_samples\":%.6g}}\n",
		       (double)ap[s].covered / (double)ap[s].n, samples[s] / (double)reps);
	}
	return 0;
}

/*
 * Small objects (16..256 B, uniform) at R = 8192: pi between 0.2% and 3%,
 * the regime where the HT relative sd is sqrt(sum R Z) / sum Z ~ 1/sqrt(s)
 * with s = total / R the expected number of samples ([R4]; STATISTICS.md
 * section 2). A smaller R than the runtime's default only shortens the
 * simulation: what matters is Z << R.
 */
#define CURVE_RATE 8192u
static int cmd_curve(long reps, long max_s)
{
	static const long grid[] = {1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000,
				    5000, 10000, 20000};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0] && grid[g] <= max_s; g++) {
		long s_exp = grid[g];
		struct err_stats e = {0};
		double samples = 0;
		for (long rep = 0; rep < reps; rep++) {
			ap_sampler_config c;
			ap_sampler sm;
			ap_prng sizes;
			ap_sampler_config_default(&c);
			c.rate = CURVE_RATE;
			c.seed = (uint64_t)s_exp * 1000003u + (uint64_t)rep + 1;
			if (ap_sampler_init(&sm, &c) || ap_prng_seed(&sizes, c.seed ^ 0x5bd1e995u)) {
				fprintf(stderr, "stride_bench: sampler init failed\n");
				return 2;
			}
			double budget = (double)s_exp * CURVE_RATE, truth = 0;
			struct site_est se = {0};
			while (truth < budget) {
				size_t z = 16 + (size_t)ap_prng_below(&sizes, 241);
				truth += (double)z;
				if (!ap_sampler_should_sample(&sm, z))
					continue;
				ap_sample_info info;
				ap_sampler_sample(&sm, z, &info);
				ap_ht_add(&se.ht, (double)z, info.prob);
				se.u += (double)(info.size - info.offset);
			}
			err_add(&e, se.ht.bytes, truth, covers(&se, CURVE_RATE, truth));
			samples += (double)se.ht.samples;
		}
		printf("{\"kind\":\"curve\",\"rate\":%u,\"expected_samples\":%ld,\"reps\":%ld,",
		       CURVE_RATE, s_exp, reps);
		err_print(&e);
		printf(",\"coverage\":%.6g,\"mean_samples\":%.6g}\n",
		       (double)e.covered / (double)e.n, samples / (double)reps);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "stride"))
		return cmd_stride(bench_arg_long("stride_bench", argv[2], 1, 10000000, "REPS"));
	if (argc == 4 && !strcmp(argv[1], "curve"))
		return cmd_curve(bench_arg_long("stride_bench", argv[2], 1, 10000000, "REPS"),
				 bench_arg_long("stride_bench", argv[3], 1, 20000, "MAXS"));
	fprintf(stderr, "usage: stride_bench stride REPS | curve REPS MAXS\n");
	return 1;
}
