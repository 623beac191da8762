/*
 * sampler.c: the slow path of per-byte allocation sampling (gap draws,
 * sample records, passthrough) and the combined limit for bump allocators.
 * The fast path is inline in allocprof/sampler.h.
 *
 * Model and formulas: docs/STATISTICS.md section 1, [R1] (jemalloc: geometric
 * gaps from one uniform), [R3] (heapprofd: counting samples inside an
 * allocation, exact recording of large ones), [R4] (.NET: first success only,
 * legal discards, combined limit).
 */
#include "allocprof/sampler.h"

#include <math.h>

#include "apmath.h" /* log, log1p, expm1 without libm: this runs in malloc */

/*
 * COUNT mode draws one gap per success inside an allocation. Past this many
 * expected successes the count is drawn in O(1) instead (see count_large).
 */
#define COUNT_LOOP_MAX 1024.0

/* log of the per-byte failure probability for rate R (R >= 2). */
static double log_q_for(uint64_t rate, ap_gap_kind gap)
{
	double r = (double)rate;
	/* Geometric: q = 1 - 1/R exactly, via log1p for accuracy at large R.
	 * Exponential: floor(-R ln U) has P(>= k) = P(U <= e^(-k/R)) = e^(-k/R),
	 * i.e. it is geometric with q = e^(-1/R); log q = -1/R. */
	return gap == AP_GAP_GEOMETRIC ? ap_log1p(-1.0 / r) : -1.0 / r;
}

static bool valid_kinds(ap_gap_kind gap, ap_sample_mode mode)
{
	return (gap == AP_GAP_GEOMETRIC || gap == AP_GAP_EXPONENTIAL) &&
	       (mode == AP_SAMPLE_FIRST || mode == AP_SAMPLE_COUNT);
}

static int check_rate(uint64_t rate)
{
	if (rate == 0)
		return AP_EINVAL;
	if (rate > AP_SAMPLER_RATE_MAX)
		return AP_ERANGE;
	return 0;
}

/* pi(Z) = 1 - q^Z = -expm1(Z log q), stable for tiny and huge Z. */
static double prob_raw(double log_q, uint64_t size)
{
	if (size == 0)
		return 0.0;
	return -ap_expm1((double)size * log_q);
}

uint64_t ap_sampler_exact_threshold(uint64_t rate, ap_gap_kind gap)
{
	if (check_rate(rate) != 0 || !valid_kinds(gap, AP_SAMPLE_FIRST))
		return 0;
	if (rate == 1)
		return 1;
	double log_q = log_q_for(rate, gap);
	/* pi(Z) > P  <=>  q^Z < 1 - P  <=>  Z > log(1 - P) / log q. Start from
	 * the real-valued root and settle the last unit against prob_raw itself,
	 * so that the threshold agrees exactly with ap_sampler_prob. */
	double root = ap_log1p(-AP_SAMPLER_PASSTHROUGH_PROB) / log_q;
	uint64_t z = root < 1.0 ? 1 : (uint64_t)root;
	while (prob_raw(log_q, z) <= AP_SAMPLER_PASSTHROUGH_PROB)
		z++;
	while (z > 1 && prob_raw(log_q, z - 1) > AP_SAMPLER_PASSTHROUGH_PROB)
		z--;
	return z;
}

/*
 * Inverse-transform gap draw: floor(log U / log q) has P(gap >= k) =
 * P(U <= q^k) = q^k, the geometric law of failures before a success. U is a
 * multiple of 2^-53, which cuts the tail beyond ~36.7 R (probability ~1e-16),
 * and the draw is capped at AP_SAMPLER_GAP_MAX (see the header).
 */
static uint64_t draw_gap(ap_sampler *s)
{
	if (s->rate == 1)
		return 0;
	double lu = ap_log(ap_prng_uniform(&s->prng));
	double g = s->gap == AP_GAP_GEOMETRIC ? lu / s->log_q
					      : lu * -(double)s->rate;
	if (!(g < (double)AP_SAMPLER_GAP_MAX))
		return AP_SAMPLER_GAP_MAX;
	return (uint64_t)g; /* g >= 0 (or -0.0): truncation is floor */
}

/* Derived parameters for rate; the caller validated it. */
static void apply_rate(ap_sampler *s, uint64_t rate)
{
	s->rate = rate;
	if (rate == 1) {
		/* Every byte succeeds, whatever the gap kind. */
		s->log_q = -(double)INFINITY;
		s->byte_p = 1.0;
	} else {
		s->log_q = log_q_for(rate, s->gap);
		s->byte_p = -ap_expm1(s->log_q);
	}
	s->exact_min = s->passthrough ? ap_sampler_exact_threshold(rate, s->gap)
				      : UINT64_MAX;
}

void ap_sampler_config_default(ap_sampler_config *c)
{
	if (!c)
		return;
	c->rate = AP_SAMPLER_DEFAULT_RATE;
	c->gap = AP_GAP_GEOMETRIC;
	c->mode = AP_SAMPLE_FIRST;
	c->passthrough = false;
	c->seed = 0;
}

int ap_sampler_init(ap_sampler *s, const ap_sampler_config *c)
{
	if (!s || !c)
		return AP_EINVAL;
	/* Inert first: if configuration fails, the fast path lets everything
	 * but absurd sizes through and the slow path samples nothing (rate 0
	 * marks the state), so a caller that ignores the error is harmless. */
	*s = (ap_sampler){.bytes_until_sample = (int64_t)AP_SAMPLER_GAP_MAX,
			  .exact_min = UINT64_MAX, .rate = 0};
	int rc = check_rate(c->rate);
	if (rc != 0)
		return rc;
	if (!valid_kinds(c->gap, c->mode))
		return AP_EINVAL;
	s->gap = c->gap;
	s->mode = c->mode;
	s->passthrough = c->passthrough;
	rc = ap_prng_seed(&s->prng, c->seed);
	if (rc != 0)
		return rc;
	apply_rate(s, c->rate);
	s->bytes_until_sample = (int64_t)draw_gap(s);
	return 0;
}

int ap_sampler_set_rate(ap_sampler *s, uint64_t rate)
{
	if (!s)
		return AP_EINVAL;
	int rc = check_rate(rate);
	if (rc != 0)
		return rc;
	apply_rate(s, rate);
	s->bytes_until_sample = (int64_t)draw_gap(s);
	return 0;
}

double ap_sampler_prob(const ap_sampler *s, uint64_t size)
{
	if (!s)
		return (double)NAN;
	if (size == 0)
		return 0.0;
	if (s->rate == 1 || (s->passthrough && size >= s->exact_min))
		return 1.0;
	return prob_raw(s->log_q, size);
}

uint64_t ap_sampler_next_gap(ap_sampler *s)
{
	return draw_gap(s);
}

void ap_sampler_redraw(ap_sampler *s)
{
	s->bytes_until_sample = (int64_t)draw_gap(s);
}

void ap_sampler_skip(ap_sampler *s, uint64_t n)
{
	uint64_t c = (uint64_t)s->bytes_until_sample;
	if (n <= c) {
		s->bytes_until_sample = (int64_t)(c - n);
		return;
	}
	/* A success fell inside the skipped trials: the failures counted from
	 * the end of the skip to the next success are again Geometric(p),
	 * independent of everything before (memorylessness), so one fresh draw
	 * is exactly the right law. */
	s->bytes_until_sample = (int64_t)draw_gap(s);
}

/*
 * Successes among n further trials when n p is large: Binomial(n, p), drawn
 * from its normal approximation N(np, npq) (Marsaglia's polar method: a
 * point uniform in the unit disc, no trigonometry) and rounded. Used
 * only when np > COUNT_LOOP_MAX, where the binomial's skewness (about
 * 1/sqrt(np) < 0.03) is the whole error; the mean is exact up to rounding,
 * so count * R / size stays unbiased. Avoids size/R draws for, say, a
 * multi-gigabyte allocation at a small R.
 */
static uint64_t count_large(ap_sampler *s, uint64_t n)
{
	double np = (double)n * s->byte_p;
	double sd = sqrt(np * (1.0 - s->byte_p));
	double v1, v2, w;
	do { /* accepted with probability pi/4 */
		v1 = 2.0 * ap_prng_uniform(&s->prng) - 1.0;
		v2 = 2.0 * ap_prng_uniform(&s->prng) - 1.0;
		w = v1 * v1 + v2 * v2;
	} while (w >= 1.0 || w == 0.0);
	double z = v1 * sqrt(-2.0 * ap_log(w) / w);
	/* Rounded to nearest: truncation is floor for x >= 0, and the
	 * runtime links no libm (whose floor an unoptimised build calls). */
	double x = np + sd * z + 0.5;
	if (!(x >= 0.0))
		return 0;
	if (x >= (double)n)
		return n;
	return (uint64_t)x;
}

/* COUNT mode after the first success at offset c: `rest` trials remain. */
static uint64_t count_rest(ap_sampler *s, uint64_t rest)
{
	if ((double)rest * s->byte_p > COUNT_LOOP_MAX) {
		/* Trials after the allocation: a fresh geometric run
		 * (memorylessness), independent of the count. */
		uint64_t k = count_large(s, rest);
		s->bytes_until_sample = (int64_t)draw_gap(s);
		return k;
	}
	uint64_t k = 0;
	for (;;) {
		uint64_t g = draw_gap(s);
		if (g >= rest) {
			s->bytes_until_sample = (int64_t)(g - rest);
			return k;
		}
		k++;
		rest -= g + 1;
	}
}

void ap_sampler_sample(ap_sampler *s, size_t size, ap_sample_info *out)
{
	uint64_t z = (uint64_t)size;
	*out = (ap_sample_info){.size = z, .offset = 0, .count = 0,
			       .prob = ap_sampler_prob(s, z), .weight = 0.0,
			       .exact = false, .rate = s->rate};
	if (z == 0 || s->rate == 0)
		return; /* no bytes, no trials: never sampled; or s not initialised */
	if (s->rate == 1 || (s->passthrough && z >= s->exact_min)) {
		/* Recorded with probability 1 and no trials consumed: skipping
		 * trials chosen by size alone is independent of their outcomes.
		 * At R = 1 the counter is always 0 and stays 0. */
		out->count = (s->rate == 1 && s->mode == AP_SAMPLE_COUNT) ? z : 1;
		out->weight = 1.0;
		out->exact = true;
		return;
	}
	uint64_t c = (uint64_t)s->bytes_until_sample;
	if (z <= c) {
		/* Not sampled: the caller skipped the fast path. */
		s->bytes_until_sample = (int64_t)(c - z);
		return;
	}
	out->offset = c;
	if (s->mode == AP_SAMPLE_FIRST) {
		/* Skip the rest of the allocation: its trials are discarded
		 * whatever they are ([R4], point 4). */
		out->count = 1;
		out->weight = 1.0 / out->prob;
		s->bytes_until_sample = (int64_t)draw_gap(s);
	} else {
		out->count = 1 + count_rest(s, z - c - 1);
		/* E[count] = z p, so count / (p z) is unbiased for one object. */
		out->weight = (double)out->count / (s->byte_p * (double)z);
	}
}

/* Failures before the first success of a per-byte run with log q = log_q
 * (draw_gap's inverse transform at another rate; capped the same way). */
static uint64_t draw_gap_at(ap_sampler *s, double log_q)
{
	double g = ap_log(ap_prng_uniform(&s->prng)) / log_q;
	if (!(g < (double)AP_SAMPLER_GAP_MAX))
		return AP_SAMPLER_GAP_MAX;
	return (uint64_t)g;
}

void ap_sampler_sample_at(ap_sampler *s, size_t size, uint64_t rate,
			  ap_sample_info *out)
{
	uint64_t z = (uint64_t)size, c, off;
	if (rate <= s->rate || s->rate == 0 || rate > AP_SAMPLER_RATE_MAX ||
	    s->gap != AP_GAP_GEOMETRIC || s->mode != AP_SAMPLE_FIRST ||
	    (s->passthrough && z >= s->exact_min)) {
		ap_sampler_sample(s, size, out);
		return;
	}
	double log_qc = ap_log1p(-1.0 / (double)rate);
	*out = (ap_sample_info){.size = z, .prob = z ? prob_raw(log_qc, z) : 0.0,
			       .rate = rate};
	c = (uint64_t)s->bytes_until_sample;
	if (z <= c) {
		s->bytes_until_sample = (int64_t)(c - z);
		return;
	}
	/* Byte c is a success at R: keep it with probability R / R_c. */
	if (ap_prng_uniform(&s->prng) < (double)s->rate / (double)rate) {
		off = c;
	} else {
		/* Dropped: bytes c+1 .. z-1 are fresh trials at 1/R_c. */
		uint64_t g = draw_gap_at(s, log_qc);
		off = g < z - c - 1 ? c + 1 + g : z;
	}
	s->bytes_until_sample = (int64_t)draw_gap(s); /* FIRST: after the block */
	if (off < z) {
		out->offset = off;
		out->count = 1;
		out->weight = 1.0 / out->prob;
	}
}

/* ---- combined limit for bump allocators ([R4]) ---- */

/*
 * How far the fast path may bump from b->ptr (== b->anchor) before it must
 * stop: no further than the next sampled byte, the end of the region, or,
 * with passthrough, exact_min - 1 bytes, so that any passthrough-sized
 * allocation leaves the fast path even when the counter would let it pass.
 */
static void recompute(ap_bump *b, const ap_sampler *s)
{
	uint64_t reach = (uint64_t)s->bytes_until_sample;
	if (s->exact_min - 1 < reach)
		reach = s->exact_min - 1;
	uintptr_t room = b->limit - b->ptr;
	b->anchor = b->ptr;
	b->combined_limit = reach < (uint64_t)room ? b->ptr + (uintptr_t)reach : b->limit;
}

void ap_bump_init(ap_bump *b, const ap_sampler *s, uintptr_t lo, uintptr_t hi)
{
	b->ptr = lo;
	b->limit = hi < lo ? lo : hi;
	recompute(b, s);
}

void ap_bump_sync(ap_bump *b, ap_sampler *s)
{
	/* The fast path never passes combined_limit <= anchor + counter, so
	 * used <= counter; the clamp only guards against misuse. */
	uint64_t used = (uint64_t)(b->ptr - b->anchor);
	uint64_t c = (uint64_t)s->bytes_until_sample;
	s->bytes_until_sample = (int64_t)(used <= c ? c - used : 0);
	b->anchor = b->ptr;
}

void ap_bump_reset(ap_bump *b, ap_sampler *s, uintptr_t lo, uintptr_t hi)
{
	ap_bump_sync(b, s);
	ap_bump_init(b, s, lo, hi);
}

unsigned ap_bump_slow(ap_bump *b, ap_sampler *s, size_t size, ap_sample_info *info)
{
	unsigned hit = 0;
	ap_bump_sync(b, s);
	if ((uint64_t)size > (uint64_t)(b->limit - b->ptr))
		hit |= AP_BUMP_REFILL;
	if (ap_sampler_should_sample_pt(s, size)) {
		ap_sampler_sample(s, size, info);
		if (info->count > 0)
			hit |= AP_BUMP_SAMPLE;
	}
	recompute(b, s);
	return hit;
}

uintptr_t ap_bump_place(ap_bump *b, const ap_sampler *s, size_t size)
{
	if ((uint64_t)size > (uint64_t)(b->limit - b->ptr))
		return 0;
	uintptr_t p = b->ptr;
	b->ptr = p + size;
	recompute(b, s);
	return p;
}
