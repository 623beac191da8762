/*
 * simulate.c: liballocprof's sampler and estimators on a simulated program.
 *
 * A few named allocation sites, each with its own size distribution, emit a
 * shuffled stream of allocations. Every allocation goes through the real
 * per-byte sampler (allocprof/sampler.h) exactly as the preload runtime
 * would drive it; only sampled allocations are "recorded". From those
 * records alone the program estimates each site's bytes with a 95%
 * interval (allocprof/estimate.h: exact negative binomial below
 * AP_NB_MAX_SAMPLES samples, Horvitz-Thompson normal above) and prints
 * them next to the truth, which a real profiler never sees.
 *
 *     simulate [--rate R] [--seed S]      (defaults: 524288, 1)
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "allocprof/estimate.h"
#include "allocprof/prng.h"
#include "allocprof/sampler.h"

typedef struct site {
	const char *name;
	uint64_t count;	     /* allocations in the run */
	uint64_t lo, hi;     /* sizes uniform in [lo, hi] */
	/* what the profiler sees */
	ap_ht ht;
	double u;	     /* sum of size - offset over samples ([R4]) */
	/* the truth, for the table only */
	double true_bytes;
} site;

static site sites[] = {
	{.name = "parse_token", .count = 3000000, .lo = 16, .hi = 48},
	{.name = "hash_insert", .count = 800000, .lo = 48, .hi = 256},
	{.name = "log_format", .count = 150000, .lo = 100, .hi = 2000},
	{.name = "read_buffer", .count = 1500, .lo = 65536, .hi = 65536},
	{.name = "decode_image", .count = 12, .lo = 3000000, .hi = 5000000},
};
#define NSITES (sizeof sites / sizeof sites[0])

static void print_row(const char *name, double truth, const ap_interval *iv,
		      uint64_t samples, const char *method)
{
	const double mib = 1048576.0;
	bool in = iv->lo <= truth && truth <= iv->hi;
	printf("%-13s %10.2f %10.2f   [%8.2f, %8.2f] %8llu  %-6s %s\n", name,
	       truth / mib, iv->estimate / mib, iv->lo / mib, iv->hi / mib,
	       (unsigned long long)samples, method, in ? "yes" : "NO");
}

static int parse_args(int argc, char **argv, uint64_t *rate, uint64_t *seed)
{
	static const struct option opts[] = {{"rate", required_argument, NULL, 'r'},
					     {"seed", required_argument, NULL, 's'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "r:s:h", opts, NULL)) != -1) {
		char *end;
		unsigned long long v;
		switch (c) {
		case 'r':
		case 's':
			v = strtoull(optarg, &end, 10);
			if (*end || !*optarg || (c == 'r' && v == 0)) {
				fprintf(stderr, "simulate: bad --%s '%s'\n",
					c == 'r' ? "rate" : "seed", optarg);
				return -1;
			}
			*(c == 'r' ? rate : seed) = v;
			break;
		case 'h':
			printf("usage: simulate [--rate R] [--seed S]\n");
			exit(0);
		default:
			return -1;
		}
	}
	return optind == argc ? 0 : -1;
}

/*
 * Interleave the sites: draw the next site with probability proportional
 * to its remaining allocations, so the stream is a random shuffle.
 */
static size_t next_site(ap_prng *r, uint64_t *left, uint64_t total_left)
{
	uint64_t k = ap_prng_below(r, total_left);
	size_t i = 0;
	while (k >= left[i])
		k -= left[i++];
	return i;
}

int main(int argc, char **argv)
{
	uint64_t rate = AP_SAMPLER_DEFAULT_RATE, seed = 1;
	if (parse_args(argc, argv, &rate, &seed)) {
		fprintf(stderr, "usage: simulate [--rate R] [--seed S]\n");
		return 1;
	}
	ap_sampler_config cfg;
	ap_sampler_config_default(&cfg);
	cfg.rate = rate;
	cfg.seed = seed;
	ap_sampler s;
	int rc = ap_sampler_init(&s, &cfg);
	if (rc) {
		fprintf(stderr, "simulate: sampler: %s\n", ap_strerror(rc));
		return 1;
	}
	ap_prng r;
	ap_prng_seed(&r, seed + 1);

	uint64_t left[NSITES], total_left = 0;
	for (size_t i = 0; i < NSITES; i++)
		total_left += left[i] = sites[i].count;
	for (; total_left > 0; total_left--) {
		size_t i = next_site(&r, left, total_left);
		site *st = &sites[i];
		left[i]--;
		uint64_t z = st->lo + ap_prng_below(&r, st->hi - st->lo + 1);
		st->true_bytes += (double)z;
		if (!ap_sampler_should_sample(&s, z))
			continue;
		ap_sample_info info;
		ap_sampler_sample(&s, z, &info);
		if (!info.count)
			continue;
		/* The record a profiler keeps: size, offset, pi. */
		ap_ht_add(&st->ht, (double)z, info.prob);
		st->u += (double)(info.size - info.offset);
	}

	printf("Simulated run, sampling rate R = %llu bytes (seed %llu)\n\n",
	       (unsigned long long)rate, (unsigned long long)seed);
	printf("%-13s %10s %10s   %-20s %8s  %-6s %s\n", "site", "true MiB",
	       "est MiB", "95% interval (MiB)", "samples", "method", "covers");
	ap_ht total = {0};
	double total_true = 0, total_u = 0;
	for (size_t i = 0; i < NSITES; i++) {
		site *st = &sites[i];
		ap_interval iv;
		bool nb;
		rc = ap_bytes_interval(st->ht.samples, st->u, (double)rate,
				       st->ht.bytes, st->ht.var_bytes, 0.95, &iv,
				       &nb);
		if (rc) {
			fprintf(stderr, "simulate: %s: %s\n", st->name,
				ap_strerror(rc));
			return 1;
		}
		print_row(st->name, st->true_bytes, &iv, st->ht.samples,
			  nb ? "NB" : "HT");
		ap_ht_merge(&total, &st->ht);
		total_true += st->true_bytes;
		total_u += st->u;
	}
	ap_interval iv;
	bool nb;
	rc = ap_bytes_interval(total.samples, total_u, (double)rate, total.bytes,
			       total.var_bytes, 0.95, &iv, &nb);
	if (rc) {
		fprintf(stderr, "simulate: total: %s\n", ap_strerror(rc));
		return 1;
	}
	printf("\n");
	print_row("total", total_true, &iv, total.samples, nb ? "NB" : "HT");
	printf("\nNB = exact negative-binomial interval (fewer than %d samples),\n"
	       "HT = Horvitz-Thompson normal interval. About 1 site in 20 may\n"
	       "miss at 95%%; try --seed to see the intervals move.\n",
	       AP_NB_MAX_SAMPLES);
	return 0;
}
