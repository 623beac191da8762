/*
 * hist_stripe_test.c: the shared histogram keeps its sums in per-CPU
 * stripes (src/lib/hist_internal.h). Recording from every CPU this process
 * may run on (the thread pins itself to each in turn, so each CPU's stripe
 * is written) must give exactly the sums, sum of squares, count, min and
 * max of the values, with carries into the high words inside stripes, and
 * a weighted record's fractional carry per stripe; reset clears them all.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "allocprof/hist.h"
#include "aptest.h"

__extension__ typedef unsigned __int128 u128;

/* The CPUs this thread may run on (at most max), in *cpus. */
static int allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 0;
	int n = 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof set, &set);
}

AP_TEST(sums_are_exact_across_every_cpus_stripe)
{
	cpu_set_t saved;
	AP_CHECK_EQ_INT(sched_getaffinity(0, sizeof saved, &saved), 0);
	int cpus[16];
	int ncpu = allowed_cpus(cpus, 16);
	AP_CHECK(ncpu >= 1);

	ap_hist *h;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, NULL), 0);
	u128 sum = 0, sq = 0;
	uint64_t count = 0, mn = UINT64_MAX, mx = 0;
	int on_own_cpu = 0;
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < ncpu; i++) {
			pin(cpus[i]);
			on_own_cpu += sched_getcpu() == cpus[i];
			/* Values near 2^58: every square carries into a stripe's
			 * high word, the sum after 64 of them (each stripe gets
			 * 90); the small ones keep min honest. */
			for (uint64_t k = 0; k < 40; k++) {
				uint64_t v = (k % 4 == 0) ? k + (uint64_t)i
							  : (UINT64_C(1) << 58) + k * 977 + (uint64_t)round;
				AP_CHECK_EQ_INT(ap_hist_add(h, v), 0);
				sum += v;
				sq += (u128)v * v;
				count++;
				mn = v < mn ? v : mn;
				mx = v > mx ? v : mx;
			}
			/* n copies at once, and a weight of 2.75: 2 now, and the
			 * carry of 0.75 per record makes 3 whole ones in 4 records
			 * when they land in one stripe (they do: pinned). */
			AP_CHECK_EQ_INT(ap_hist_add_n(h, 1000, 5), 0);
			sum += 5000;
			sq += (u128)5 * 1000 * 1000;
			count += 5;
			for (int w = 0; w < 4; w++)
				AP_CHECK_EQ_INT(ap_hist_add_weight(h, 3000, 2.75), 0);
			sum += 11 * 3000;
			sq += (u128)11 * 3000 * 3000;
			count += 11;
		}
	}
	AP_CHECK_EQ_INT(sched_setaffinity(0, sizeof saved, &saved), 0);
	/* Pinning worked at least once per CPU (else the test proved little). */
	AP_CHECK(on_own_cpu >= ncpu);

	ap_hist_snap *s;
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(s), count);
	uint64_t got_mn = 0, got_mx = 0, hi, lo;
	AP_CHECK_EQ_INT(ap_hist_snap_min(s, &got_mn), 0);
	AP_CHECK_EQ_INT(ap_hist_snap_max(s, &got_mx), 0);
	AP_CHECK_EQ_U64(got_mn, mn);
	AP_CHECK_EQ_U64(got_mx, mx);
	ap_hist_snap_sum(s, &hi, &lo);
	AP_CHECK_EQ_U64(hi, (uint64_t)(sum >> 64));
	AP_CHECK_EQ_U64(lo, (uint64_t)sum);
	AP_CHECK(ap_hist_snap_sumsq(s, &hi, &lo));
	AP_CHECK_EQ_U64(hi, (uint64_t)(sq >> 64));
	AP_CHECK_EQ_U64(lo, (uint64_t)sq);
	ap_hist_snap_destroy(s);

	ap_hist_reset(h);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(s), 0);
	ap_hist_snap_sum(s, &hi, &lo);
	AP_CHECK_EQ_U64(hi | lo, 0);
	ap_hist_snap_destroy(s);
	/* After a reset no stripe may still hold a weight remainder: one
	 * record of 2.75 gives exactly 2. */
	AP_CHECK_EQ_INT(ap_hist_add_weight(h, 7, 2.75), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(s), 2);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

