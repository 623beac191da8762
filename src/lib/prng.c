/*
 * prng.c: xoshiro256** seeded through SplitMix64 (see allocprof/prng.h).
 *
 * The generator is Blackman and Vigna's xoshiro256** ("Scrambled linear
 * pseudorandom number generators", ACM TOMS 2021); SplitMix64 (Steele, Lea
 * and Flood, OOPSLA 2014) turns one 64-bit seed into the 256-bit state, as
 * the xoshiro authors recommend, so that similar seeds give unrelated
 * streams and the state is never all zero. Nothing here keeps global state.
 */
#define _GNU_SOURCE
#include "allocprof/prng.h"

#include <errno.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"

static uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* One SplitMix64 step: advance *x by the golden-ratio increment, then mix. */
static uint64_t splitmix64(uint64_t *x)
{
	return hash_mix64(*x += UINT64_C(0x9e3779b97f4a7c15));
}

/*
 * A seed nobody chose: getrandom(2) without blocking (early in boot the
 * pool may not be ready, and a profiler must not stall its host), else the
 * clocks, pid and a stack address hashed together. Sampling needs
 * unpredictability across runs, not cryptographic strength.
 */
static uint64_t random_seed(void)
{
	uint64_t v = 0;
	for (;;) {
		ssize_t n = getrandom(&v, sizeof v, GRND_NONBLOCK);
		if (n == (ssize_t)sizeof v)
			return v;
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	struct timespec a = {0, 0}, b = {0, 0};
	clock_gettime(CLOCK_REALTIME, &a);
	clock_gettime(CLOCK_MONOTONIC, &b);
	uint64_t x = (uint64_t)a.tv_sec * UINT64_C(1000000007) ^ (uint64_t)a.tv_nsec;
	uint64_t h = splitmix64(&x);
	x ^= (uint64_t)b.tv_nsec ^ ((uint64_t)getpid() << 32);
	h ^= splitmix64(&x);
	x ^= (uint64_t)(uintptr_t)&v;
	return h ^ splitmix64(&x);
}

int ap_prng_seed_stream(ap_prng *r, uint64_t seed, uint64_t stream)
{
	if (!r)
		return AP_EINVAL;
	uint64_t x;
	if (seed == 0) {
		x = random_seed();
	} else {
		/* Hash the stream number before combining so that (seed, stream)
		 * pairs do not start overlapping SplitMix64 sequences. */
		uint64_t t = stream;
		x = seed ^ (stream ? splitmix64(&t) : 0);
	}
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
		r->s[0] = 1; /* unreachable in practice; all-zero is a fixed point */
	return 0;
}

int ap_prng_seed(ap_prng *r, uint64_t seed)
{
	return ap_prng_seed_stream(r, seed, 0);
}

uint64_t ap_prng_next(ap_prng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return out;
}

double ap_prng_uniform(ap_prng *r)
{
	/* The top 53 bits give k in [0, 2^53); (k + 1) * 2^-53 lies in (0, 1]
	 * and every value is exactly representable. */
	return (double)((ap_prng_next(r) >> 11) + 1) * 0x1.0p-53;
}

uint64_t ap_prng_below(ap_prng *r, uint64_t n)
{
	if (n == 0)
		return 0;
	/* Reject the lowest (2^64 mod n) values so that the rest split evenly
	 * into n classes. At most half the range is rejected, so the expected
	 * number of draws is below 2. */
	uint64_t reject_below = (0 - n) % n;
	for (;;) {
		uint64_t x = ap_prng_next(r);
		if (x >= reject_below)
			return x % n;
	}
}
