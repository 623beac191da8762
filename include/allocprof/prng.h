/*
 * allocprof/prng.h: the pseudo-random generator behind the sampler.
 *
 * xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number
 * generators", 2021): 256 bits of state, period 2^256 - 1, a handful of
 * instructions per draw, no global state. One generator per thread (the
 * sampler embeds one); nothing here is thread-safe. Not for cryptography.
 *
 * Seeding expands a 64-bit seed with SplitMix64, so that nearby seeds (1, 2,
 * 3...) give unrelated streams and the state is never all zero. Seed 0 asks
 * for a random seed from getrandom(2).
 */
#ifndef ALLOCPROF_PRNG_H
#define ALLOCPROF_PRNG_H

#include <stdint.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ap_prng {
	uint64_t s[4]; /* never all zero once seeded */
} ap_prng;

/*
 * Seed r. seed != 0: deterministic, the same seed always gives the same
 * stream. seed == 0: a random seed from getrandom(2) (non-blocking); if the
 * kernel cannot supply one, falls back to mixing the clock, pid and an
 * address, which is unpredictable enough for sampling. Returns 0, or
 * AP_EINVAL when r is NULL.
 */
AP_API int ap_prng_seed(ap_prng *r, uint64_t seed);

/*
 * Seed r with stream number `stream` of seed `seed`: (seed, stream) pairs are
 * hashed together, so threads of one process can share a configured seed and
 * still draw unrelated streams (thread i uses stream i). seed == 0 is random
 * as for ap_prng_seed, and then stream is ignored. Returns 0 or AP_EINVAL.
 */
AP_API int ap_prng_seed_stream(ap_prng *r, uint64_t seed, uint64_t stream);

/* Next 64 uniformly distributed bits. */
AP_API uint64_t ap_prng_next(ap_prng *r);

/*
 * A uniform double in (0, 1], never 0: (k + 1) * 2^-53 for a uniform 53-bit
 * k, so log() of it is always finite (the inverse-transform gap draws rely
 * on that). Mean 1/2 + 2^-54, variance (1 - 2^-106) / 12.
 */
AP_API double ap_prng_uniform(ap_prng *r);

/* A uniform integer in [0, n), without modulo bias; 0 when n == 0. */
AP_API uint64_t ap_prng_below(ap_prng *r, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_PRNG_H */
