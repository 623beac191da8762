/*
 * hist_inline_test.c: the inline record path (ap_hist_recorder_add_inline)
 * must give exactly what ap_hist_recorder_add and the shared ap_hist_add
 * give, and what an independent reference computes: count, min, max, the
 * 128-bit sum, the 128-bit sum of squares with its saturation flag, and
 * every bucket. The streams mix every binary order of magnitude and the
 * values the common case must hand to the general path: 2^32 and above,
 * carries out of the low words of the sum and of the sum of squares,
 * counters not allocated yet, and values recorded after a reset. Also the
 * published layout (allocprof/hist_inline.h) and the error path.
 */
#include <stdlib.h>
#include <string.h>

#include "allocprof/hist_inline.h"
#include "aptest.h"

__extension__ typedef unsigned __int128 u128;

/* SplitMix64: fixed seeds, so every run sees the same streams. */
static uint64_t next_u64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* Exact reference, computed without the library's recording code. */
struct ref {
	unsigned sigbits;
	uint64_t *bucket; /* dense, ap_hist_key_count(sigbits) entries */
	uint64_t count, min, max;
	u128 sum, sumsq;
	bool sq_sat;
};

static bool ref_init(struct ref *r, unsigned sigbits)
{
	memset(r, 0, sizeof *r);
	r->sigbits = sigbits;
	r->min = UINT64_MAX;
	r->bucket = calloc(ap_hist_key_count(sigbits), sizeof *r->bucket);
	return r->bucket != NULL;
}

static void ref_add(struct ref *r, uint64_t v)
{
	r->bucket[ap_hist_value_to_key(r->sigbits, v)]++;
	r->count++;
	r->min = v < r->min ? v : r->min;
	r->max = v > r->max ? v : r->max;
	r->sum += v;
	if (__builtin_add_overflow(r->sumsq, (u128)v * v, &r->sumsq))
		r->sq_sat = true;
}

/* Three recorders of the same values: inline, out of line, shared. */
struct trio {
	ap_hist *hi, *ho, *hs;
	ap_hist_recorder *ri, *ro;
	struct ref ref;
	int errors;
};

static bool trio_init(struct trio *t, unsigned sigbits)
{
	memset(t, 0, sizeof *t);
	return !ap_hist_create(&t->hi, sigbits, NULL) &&
	       !ap_hist_create(&t->ho, sigbits, NULL) &&
	       !ap_hist_create(&t->hs, sigbits, NULL) &&
	       !ap_hist_recorder_get(t->hi, &t->ri) &&
	       !ap_hist_recorder_get(t->ho, &t->ro) &&
	       ref_init(&t->ref, sigbits);
}

static void trio_add(struct trio *t, uint64_t v)
{
	t->errors += ap_hist_recorder_add_inline(t->ri, v) != 0;
	t->errors += ap_hist_recorder_add(t->ro, v) != 0;
	t->errors += ap_hist_add(t->hs, v) != 0;
	ref_add(&t->ref, v);
}

static void trio_reset(struct trio *t)
{
	ap_hist_reset(t->hi);
	ap_hist_reset(t->ho);
	ap_hist_reset(t->hs);
	unsigned s = t->ref.sigbits;
	free(t->ref.bucket);
	t->errors += !ref_init(&t->ref, s);
}

static void trio_free(struct trio *t)
{
	ap_hist_destroy(t->hi);
	ap_hist_destroy(t->ho);
	ap_hist_destroy(t->hs);
	free(t->ref.bucket);
}

/* Check one snapshot field by field against the reference; returns the
 * number of mismatches and names the first. */
static int snap_vs_ref(const ap_hist_snap *s, const struct ref *r,
		       const char *who)
{
	char what[96] = "";
	int bad = 0;
#define MISMATCH(cond, name)                                                  \
	do {                                                                  \
		if (cond) {                                                   \
			if (!bad++)                                           \
				snprintf(what, sizeof what, "%s", name);      \
		}                                                             \
	} while (0)
	uint64_t mn = 0, mx = 0, hi, lo;
	MISMATCH(ap_hist_snap_count(s) != r->count, "count");
	MISMATCH(ap_hist_snap_dropped(s) != 0, "dropped");
	if (r->count) {
		MISMATCH(ap_hist_snap_min(s, &mn) || mn != r->min, "min");
		MISMATCH(ap_hist_snap_max(s, &mx) || mx != r->max, "max");
	}
	ap_hist_snap_sum(s, &hi, &lo);
	MISMATCH(hi != (uint64_t)(r->sum >> 64) || lo != (uint64_t)r->sum, "sum");
	bool exact = ap_hist_snap_sumsq(s, &hi, &lo);
	MISMATCH(exact != !r->sq_sat, "sum of squares saturation flag");
	if (exact)
		MISMATCH(hi != (uint64_t)(r->sumsq >> 64) ||
				 lo != (uint64_t)r->sumsq,
			 "sum of squares");
	/* Every bucket: the snapshot's non-empty ones equal the reference's
	 * non-empty ones, in order. */
	uint32_t nk = ap_hist_key_count(r->sigbits);
	size_t i = 0, n = ap_hist_snap_bucket_count(s);
	for (uint32_t k = 0; k < nk; k++) {
		if (!r->bucket[k])
			continue;
		ap_hist_bucket b;
		MISMATCH(i >= n || ap_hist_snap_bucket(s, i, &b) || b.key != k ||
				 b.count != r->bucket[k],
			 "a bucket");
		i++;
	}
	MISMATCH(i != n, "bucket count");
#undef MISMATCH
	if (bad)
		fprintf(stderr, "  %s: %d mismatches, first: %s\n", who, bad, what);
	return bad;
}

/* Snapshot all three and compare each with the reference. */
static int trio_check(struct trio *t)
{
	ap_hist_snap *si = NULL, *so = NULL, *ss = NULL;
	int bad = 0;
	if (ap_hist_snapshot(t->hi, NULL, &si) ||
	    ap_hist_snapshot(t->ho, NULL, &so) ||
	    ap_hist_snapshot(t->hs, NULL, &ss)) {
		bad = 1;
	} else {
		bad += snap_vs_ref(si, &t->ref, "inline recorder");
		bad += snap_vs_ref(so, &t->ref, "out-of-line recorder");
		bad += snap_vs_ref(ss, &t->ref, "shared histogram");
		bad += !ap_hist_snap_equal(si, so) || !ap_hist_snap_equal(si, ss);
	}
	ap_hist_snap_destroy(si);
	ap_hist_snap_destroy(so);
	ap_hist_snap_destroy(ss);
	return bad;
}

/* Edges whose squares, summed over the streams below, stay below 2^128
 * (so the sum of squares is compared exactly); UINT64_MAX and other
 * saturating values are in saturated_sum_of_squares_matches. */
/* Errors while recording plus mismatches at the end; frees t. */
static int trio_done(struct trio *t)
{
	int bad = t->errors + trio_check(t);
	trio_free(t);
	return bad;
}

static const uint64_t edges[] = {
	0, 1, 2, 3, 31, 32, 63, 64, 65, 1000,
	UINT32_MAX - 1, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
	(uint64_t)UINT32_MAX + 2, UINT64_C(1) << 55, (UINT64_C(1) << 56) - 1};

/* A value of a random binary order below 2^56: nearly every exponent, and
 * so nearly every chunk, shows up early and is first met through the
 * inline path; 2^5 values of squares below 2^112 each keep the sum of
 * squares of a few 10^5 of them far below 2^128. */
static uint64_t any_order(uint64_t *x)
{
	uint64_t z = next_u64(x) >> 8;
	return z >> (next_u64(x) % 56);
}

AP_TEST(inline_matches_out_of_line_shared_and_reference)
{
	static const unsigned sigbits[] = {1, 4, 5, 10, 15};
	for (size_t si = 0; si < sizeof sigbits / sizeof sigbits[0]; si++) {
		struct trio t;
		AP_CHECK(trio_init(&t, sigbits[si]));
		uint64_t x = 42 + si;
		/* Edges first, into empty recorders: all chunk allocations. */
		for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
			trio_add(&t, edges[i]);
		for (int i = 0; i < 100000; i++)
			trio_add(&t, any_order(&x));
		/* Mostly small values, the common case, between big ones. */
		for (int i = 0; i < 100000; i++)
			trio_add(&t, next_u64(&x) >> (32 + (i & 31)));
		AP_CHECK(!t.ref.sq_sat); /* else sums of squares go unchecked */
		AP_CHECK_MSG(trio_done(&t) == 0, "sigbits %u", sigbits[si]);
	}
}

/*
 * Bring the low word of the sum to `target` with values of at most 2^62
 * (squares of at most 2^124, so a few rounds cannot saturate the 128-bit
 * sum of squares). They are >= 2^32 or not, and take whichever path.
 */
static void push_sum_lo_to(struct trio *t, uint64_t target)
{
	uint64_t d = target - (uint64_t)t->ref.sum;
	while (d) {
		uint64_t step = d < (UINT64_C(1) << 62) ? d : UINT64_C(1) << 62;
		trio_add(t, step);
		d -= step;
	}
}

AP_TEST(carries_out_of_the_low_words_go_to_the_general_path)
{
	struct trio t;
	AP_CHECK(trio_init(&t, 5));
	/* Sum: with the low word at 2^64 - 1 - j, the small values 1, 2, 3
	 * (allocated: the common case's candidates) carry into the high word
	 * at the (j+1)-th of them. Three rounds, three positions. */
	trio_add(&t, 1);
	for (uint64_t j = 0; j < 3; j++) {
		push_sum_lo_to(&t, UINT64_MAX - j);
		for (uint64_t v = 1; v <= 3; v++)
			trio_add(&t, v);
	}
	AP_CHECK((uint64_t)(t.ref.sum >> 64) >= 3); /* the carries happened */
	/* Sum of squares: (2^32 - 1)^2 = 2^64 - 2^33 + 1, so the low word
	 * carries out at nearly every one of a run of such values, although
	 * every input is below 2^32. */
	u128 sq_before = t.ref.sumsq;
	for (int i = 0; i < 1000; i++)
		trio_add(&t, UINT32_MAX);
	for (int i = 0; i < 1000; i++)
		trio_add(&t, UINT32_MAX - (uint64_t)i * 4099);
	AP_CHECK(!t.ref.sq_sat && (t.ref.sumsq - sq_before) >> 64 >= 1900);
	AP_CHECK_EQ_INT(trio_done(&t), 0);
}

AP_TEST(saturated_sum_of_squares_matches)
{
	struct trio t;
	AP_CHECK(trio_init(&t, 7));
	trio_add(&t, UINT64_MAX - 1); /* into an empty recorder */
	for (int i = 0; i < 3; i++) /* 3 (2^64 - 1)^2 > 2^128 */
		trio_add(&t, UINT64_MAX);
	trio_add(&t, UINT64_MAX / 2);
	for (uint64_t v = 0; v < 5000; v++)
		trio_add(&t, v * 7919);
	AP_CHECK(t.ref.sq_sat);
	AP_CHECK_EQ_INT(trio_done(&t), 0);
}

AP_TEST(after_reset_min_max_and_sums_restart)
{
	struct trio t;
	AP_CHECK(trio_init(&t, 5));
	uint64_t x = 7;
	for (int i = 0; i < 20000; i++)
		trio_add(&t, any_order(&x));
	trio_reset(&t);
	/* Counters stay allocated: these take the common case at once, and
	 * min/max must still move from their empty values (0 first: it is
	 * both the smallest value and equal to the empty max). */
	trio_add(&t, 0);
	trio_add(&t, 500);
	for (int i = 0; i < 20000; i++)
		trio_add(&t, next_u64(&x) >> 40);
	AP_CHECK_EQ_INT(trio_done(&t), 0);
}

AP_TEST(monotone_runs_move_min_and_max_on_every_record)
{
	/* Each value is a new minimum (then maximum) and, its counters being
	 * allocated, takes the common case. The runs end off bucket edges:
	 * a snapshot clamps min/max into the outermost buckets, which would
	 * otherwise hide a missed update. */
	struct trio t;
	AP_CHECK(trio_init(&t, 5));
	for (uint64_t v = UINT64_C(1) << 20; v >= (UINT64_C(1) << 19) + 3; v--)
		trio_add(&t, v);
	for (uint64_t v = UINT64_C(1) << 20; v <= (UINT64_C(1) << 21) + 5; v++)
		trio_add(&t, v);
	AP_CHECK_EQ_U64(t.ref.min, (UINT64_C(1) << 19) + 3);
	AP_CHECK_EQ_INT(trio_done(&t), 0);
}

AP_TEST(published_layout_reads_as_the_recorder)
{
	for (unsigned s = AP_HIST_SIGBITS_MIN; s <= AP_HIST_SIGBITS_MAX; s++) {
		ap_hist *h;
		ap_hist_recorder *r;
		AP_CHECK_EQ_INT(ap_hist_create(&h, s, NULL), 0);
		AP_CHECK_EQ_INT(ap_hist_recorder_get(h, &r), 0);
		struct ap_hist_recorder_hot *hot = ap_hist_recorder_hot_of(r);
		AP_CHECK_EQ_U64(hot->sigbits, s);
		AP_CHECK_EQ_U64(hot->lead, UINT64_C(1) << s);
		AP_CHECK_EQ_U64(atomic_load(&hot->min), UINT64_MAX);
		AP_CHECK_EQ_U64(atomic_load(&hot->max), 0);
		for (unsigned e = 0; e < 64; e++)
			AP_CHECK_EQ_U64(atomic_load(&hot->base[e]), 0);
		/* One value of every exponent. The table gets an entry exactly
		 * for the exponents of values below 2^32 (the common case's
		 * squares fit 64 bits only there). */
		for (unsigned b = 0; b < 64; b++)
			AP_CHECK_EQ_INT(ap_hist_recorder_add_inline(
						r, UINT64_C(1) << b),
					0);
		for (unsigned e = 0; e < 64; e++) {
			bool want = e < 32 - s;
			AP_CHECK_MSG((atomic_load(&hot->base[e]) != 0) == want,
				     "sigbits %u exponent %u", s, e);
		}
		AP_CHECK_EQ_U64(atomic_load(&hot->min), 1);
		AP_CHECK_EQ_U64(atomic_load(&hot->max), UINT64_C(1) << 63);
		/* The low word of the sum, written by both paths. */
		AP_CHECK_EQ_U64(atomic_load(&hot->sum_lo), UINT64_MAX);
		ap_hist_destroy(h);
	}
}

/* An allocator that fails every allocation after the first `budget`. */
static void *f_alloc(void *ctx, size_t n)
{
	int *budget = ctx;
	return (*budget)-- > 0 ? malloc(n) : NULL;
}

static void *f_realloc(void *ctx, void *p, size_t o, size_t n)
{
	(void)o;
	int *budget = ctx;
	return (*budget)-- > 0 ? realloc(p, n) : NULL;
}

static void f_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	(void)n;
	free(p);
}

AP_TEST(allocation_failure_is_reported_and_counted_once)
{
	int budget = 2; /* the histogram and the recorder, no counters */
	ap_allocator a = {f_alloc, f_realloc, f_free, &budget};
	ap_hist *h;
	ap_hist_recorder *r;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, &a), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_get(h, &r), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_add_inline(r, 100), AP_ENOMEM);
	AP_CHECK_EQ_INT(ap_hist_recorder_add_inline(r, 0), AP_ENOMEM);
	budget = 1;
	AP_CHECK_EQ_INT(ap_hist_recorder_add_inline(r, 100), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_add_inline(r, 101), 0);
	ap_hist_snap *s;
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(s), 2);
	AP_CHECK_EQ_U64(ap_hist_snap_dropped(s), 2);
	uint64_t mn, mx;
	AP_CHECK(!ap_hist_snap_min(s, &mn) && !ap_hist_snap_max(s, &mx));
	AP_CHECK_EQ_U64(mn, 100);
	AP_CHECK_EQ_U64(mx, 101);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}
