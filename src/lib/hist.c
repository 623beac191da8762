/*
 * hist.c: the live log-linear histogram: creation, lock-free recording into
 * the shared histogram (relaxed atomic read-modify-writes) and into
 * per-thread recorders (single writer: relaxed load + store, no RMW), lazy
 * per-exponent counter arrays installed by compare-and-swap, reset, memory
 * accounting and taking a snapshot that merges the shared counters with
 * every recorder. Queries live in hist_query.c.
 *
 * ap_hist_add itself records into a per-thread recorder of h bound behind
 * the caller's back (hist_tls.c); the atomic path remains for weighted
 * records (one carry for the whole histogram), merges and the fallback.
 *
 * One recording routine serves both flavours: core_add() takes a constant
 * `shared` flag and is always inlined, so each caller gets straight-line code
 * with either atomic RMWs (shared) or plain load/add/store (recorder). The
 * recorder still uses atomic loads and stores so that a snapshot taken from
 * another thread is race-free (ThreadSanitizer-clean); on x86 and ARM64 a
 * relaxed atomic load/store is an ordinary move. The recorder's common case
 * is not here but in allocprof/hist_inline.h (ap_hist_recorder_add_common), so
 * that callers can inline it; this file keeps the layout it relies on.
 */
#define _GNU_SOURCE /* sched_getcpu */
#include <math.h>
#include <sched.h>
#include <string.h>

#include "hist_internal.h"

#define RLX memory_order_relaxed

/* ---- Bucketing (public helpers) ----------------------------------------- */

unsigned ap_hist_sigbits_for_digits(double digits)
{
	if (!(digits > 0.0) || !isfinite(digits))
		return 0;
	/* 2^-s <= 10^-d  <=>  s >= d * log2(10); 1e-12 absorbs rounding of d. */
	double need = digits * 3.321928094887362 - 1e-12;
	for (unsigned s = AP_HIST_SIGBITS_MIN; s <= AP_HIST_SIGBITS_MAX; s++)
		if ((double)s >= need)
			return s;
	return 0;
}

uint32_t ap_hist_key_count(unsigned sigbits)
{
	return hist_sigbits_ok(sigbits) ? hist_nkeys(sigbits) : 0;
}

uint32_t ap_hist_value_to_key(unsigned sigbits, uint64_t v)
{
	return hist_key(sigbits, v);
}

int ap_hist_key_bounds(unsigned sigbits, uint32_t key, uint64_t *lo,
		       uint64_t *hi)
{
	if (!hist_sigbits_ok(sigbits) || key >= hist_nkeys(sigbits))
		return AP_EINVAL;
	hist_bounds(sigbits, key, lo, hi);
	return 0;
}

const ap_allocator *apx_hist_alloc_or_libc(const ap_allocator *a)
{
	return a ? a : ap_allocator_libc();
}

/* ---- Counters ----------------------------------------------------------- */

static inline void cnt_add(_Atomic uint64_t *p, uint64_t n, bool shared)
{
	if (shared)
		atomic_fetch_add_explicit(p, n, RLX);
	else
		atomic_store_explicit(p, atomic_load_explicit(p, RLX) + n, RLX);
}

/* Add x to the 128-bit counter (lo, hi). Returns true if it overflowed. */
static inline bool add128(_Atomic uint64_t *lo, _Atomic uint64_t *hi,
			  hist_u128 x, bool shared)
{
	uint64_t xl = (uint64_t)x, xh = (uint64_t)(x >> 64);
	uint64_t old;
	if (shared) {
		old = atomic_fetch_add_explicit(lo, xl, RLX);
	} else {
		old = atomic_load_explicit(lo, RLX);
		atomic_store_explicit(lo, old + xl, RLX);
	}
	uint64_t carry = old + xl < old;
	if (AP_LIKELY(!(xh | carry)))
		return false;
	uint64_t add = xh + carry, oh;
	bool wrap = add < xh;
	if (shared) {
		oh = atomic_fetch_add_explicit(hi, add, RLX);
	} else {
		oh = atomic_load_explicit(hi, RLX);
		atomic_store_explicit(hi, oh + add, RLX);
	}
	return wrap || oh + add < oh;
}

static inline void atomic_min(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t m = atomic_load_explicit(p, RLX);
	while (v < m && !atomic_compare_exchange_weak_explicit(p, &m, v, RLX, RLX)) {
	}
}

static inline void atomic_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t m = atomic_load_explicit(p, RLX);
	while (v > m && !atomic_compare_exchange_weak_explicit(p, &m, v, RLX, RLX)) {
	}
}

/*
 * The inline record path compiles the layout of struct ap_hist_recorder_hot
 * into the programs that opt in to allocprof/hist_inline.h. That layout is
 * declared unstable there (it may change in any release), but a change must
 * still be deliberate: these assertions pin it, so it fails here first, and
 * whoever changes it updates the numbers and the release notes.
 */
_Static_assert(offsetof(struct ap_hist_recorder, core) == 0 &&
		       offsetof(struct hist_core, hot) == 0,
	       "the hot part must be the first member of a recorder");
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(offsetof(struct ap_hist_recorder_hot, base) == 0 &&
		       offsetof(struct ap_hist_recorder_hot, sigbits) == 512 &&
		       offsetof(struct ap_hist_recorder_hot, lead) == 520 &&
		       offsetof(struct ap_hist_recorder_hot, min) == 592 &&
		       offsetof(struct ap_hist_recorder_hot, max) == 600 &&
		       offsetof(struct ap_hist_recorder_hot, sum_lo) == 672 &&
		       offsetof(struct ap_hist_recorder_hot, sq_lo) == 680 &&
		       sizeof(struct ap_hist_recorder_hot) == 688,
	       "struct ap_hist_recorder_hot changed: update these numbers and "
	       "say so in the release notes (allocprof/hist_inline.h)");
#endif
_Static_assert(sizeof(((struct ap_hist_recorder_hot *)0)->base) /
			       sizeof(uintptr_t) >= 64 - AP_HIST_SIGBITS_MIN,
	       "base[] must cover every exponent");

static void core_init(struct hist_core *c, unsigned sigbits)
{
	memset(c, 0, sizeof *c);
	c->hot.sigbits = sigbits;
	c->hot.lead = UINT64_C(1) << sigbits;
	c->mask = (UINT32_C(1) << sigbits) - 1;
	atomic_init(&c->hot.min, UINT64_MAX);
}

/* Bytes of the allocation behind chunk ci (chunks 0 and 1 are one). */
static size_t chunk_alloc_bytes(const struct hist_core *c, unsigned ci)
{
	return sizeof(_Atomic uint64_t) << (c->hot.sigbits + (ci == 0));
}

/*
 * Slow path: allocate chunk ci and install it with CAS; when another thread
 * won the race, free our copy and use the winner's. (A recorder has one
 * writer, so its CAS never fails; one routine serves both.) Chunks 0 and 1
 * (the values below 2^(sigbits+1), exponent 0) are allocated together and
 * installed through chunk[0]; every thread that needs chunk 1 stores the
 * same address into chunk[1]. Then the biased entry of the inline path's
 * table base[] is published, for values below 2^32 only (allocprof/hist.h).
 */
static __attribute__((noinline)) _Atomic uint64_t *
core_install_chunk(struct hist_core *c, const ap_allocator *a, unsigned ci)
{
	unsigned s = c->hot.sigbits;
	unsigned unit = ci > 1 ? ci : 0;
	_Atomic uint64_t *got =
		atomic_load_explicit(&c->chunk[unit], memory_order_acquire);
	if (!got) {
		size_t bytes = chunk_alloc_bytes(c, unit);
		_Atomic uint64_t *mem = a->alloc(a->ctx, bytes);
		if (!mem)
			return NULL;
		memset(mem, 0, bytes);
		if (atomic_compare_exchange_strong_explicit(
			    &c->chunk[unit], &got, mem, memory_order_release,
			    memory_order_acquire)) {
			atomic_fetch_add_explicit(&c->chunk_bytes, bytes, RLX);
			got = mem;
		} else {
			a->free(a->ctx, mem, bytes);
		}
	}
	if (unit == 0)
		atomic_store_explicit(&c->chunk[1], got + ((size_t)1 << s),
				      memory_order_release);
	/* Exponent e = ci - 1 (both chunks 0 and 1 have e = 0); counters of v
	 * start at chunk[e + 1] - 2^s, which for e = 0 is chunk[0] itself. */
	unsigned e = ci ? ci - 1 : 0;
	if (e < 32 - s) {
		_Atomic uint64_t *first = atomic_load_explicit(
			&c->chunk[e + 1], memory_order_acquire);
		atomic_store_explicit(&c->hot.base[e],
				      (uintptr_t)first -
					      (sizeof(uint64_t) << s),
				      memory_order_release);
	}
	return atomic_load_explicit(&c->chunk[ci], memory_order_acquire);
}

/*
 * st: where the sums go. NULL: a recorder, single writer, into the core's
 * own sums with plain load/add/store; else a shared histogram, atomic
 * read-modify-writes into the calling CPU's stripe (hist_internal.h).
 */
static inline __attribute__((always_inline)) int
core_add(struct hist_core *c, const ap_allocator *a, uint64_t v, uint64_t n,
	 struct hist_stripe *st)
{
	const bool shared = st != NULL;
	unsigned s = c->hot.sigbits;
	uint32_t key = hist_key(s, v);
	_Atomic uint64_t *ch =
		atomic_load_explicit(&c->chunk[key >> s], memory_order_acquire);
	if (AP_UNLIKELY(!ch)) {
		ch = core_install_chunk(c, a, key >> s);
		if (!ch) {
			atomic_fetch_add_explicit(&c->dropped, n, RLX);
			return AP_ENOMEM;
		}
	}
	cnt_add(&ch[key & ((UINT32_C(1) << s) - 1)], n, shared);
	_Atomic uint64_t *sum_lo = st ? &st->sum_lo : &c->hot.sum_lo;
	_Atomic uint64_t *sum_hi = st ? &st->sum_hi : &c->sum_hi;
	_Atomic uint64_t *sq_lo = st ? &st->sq_lo : &c->hot.sq_lo;
	_Atomic uint64_t *sq_hi = st ? &st->sq_hi : &c->sq_hi;
	add128(sum_lo, sum_hi, (hist_u128)v * n, shared);

	hist_u128 sq = (hist_u128)v * v;
	bool sat = n != 1 && __builtin_mul_overflow(sq, (hist_u128)n, &sq);
	if (AP_UNLIKELY(sat) || add128(sq_lo, sq_hi, sq, shared))
		atomic_store_explicit(&c->sq_sat, 1, RLX);

	if (shared) {
		atomic_min(&c->hot.min, v);
		atomic_max(&c->hot.max, v);
	} else {
		if (v < atomic_load_explicit(&c->hot.min, RLX))
			atomic_store_explicit(&c->hot.min, v, RLX);
		if (v > atomic_load_explicit(&c->hot.max, RLX))
			atomic_store_explicit(&c->hot.max, v, RLX);
	}
	return 0;
}

/*
 * Weighted record: integer part exactly, fraction into a 32.32 fixed-point
 * carry. The carry is only ever increased by an amount below 2^32, so
 * "the low 32 bits overflowed" is exactly "a whole unit accumulated", even
 * after the 64-bit word itself wraps.
 */
static int core_add_weight(struct hist_core *c, const ap_allocator *a,
			   uint64_t v, double w, struct hist_stripe *st)
{
	if (!(w >= 0.0) || !(w < 9223372036854775808.0))
		return AP_EINVAL;
	uint64_t n = (uint64_t)w;
	uint64_t f = (uint64_t)((w - (double)n) * 4294967296.0 + 0.5);
	if (f >= UINT64_C(1) << 32) {
		n++;
		f = 0;
	}
	if (f) {
		uint64_t old;
		if (st) {
			old = atomic_fetch_add_explicit(&st->carry, f, RLX);
		} else {
			old = atomic_load_explicit(&c->carry, RLX);
			atomic_store_explicit(&c->carry, old + f, RLX);
		}
		n += ((old & 0xffffffffu) + f) >> 32;
	}
	return n ? core_add(c, a, v, n, st) : 0;
}

/* ---- The shared histogram ----------------------------------------------- */

/* Zero every stripe's sums (at creation: the memory is uninitialised). */
static void stripes_clear(ap_hist *h)
{
	for (unsigned i = 0; i < HIST_STRIPES; i++) {
		struct hist_stripe *st = hist_stripe(h, i);
		atomic_store_explicit(&st->sum_lo, 0, RLX);
		atomic_store_explicit(&st->sum_hi, 0, RLX);
		atomic_store_explicit(&st->sq_lo, 0, RLX);
		atomic_store_explicit(&st->sq_hi, 0, RLX);
		atomic_store_explicit(&st->carry, 0, RLX);
	}
}

int ap_hist_create(ap_hist **out, unsigned sigbits, const ap_allocator *alloc)
{
	if (!out || !hist_sigbits_ok(sigbits))
		return AP_EINVAL;
	const ap_allocator *a = apx_hist_alloc_or_libc(alloc);
	ap_hist *h = a->alloc(a->ctx, sizeof *h);
	if (!h)
		return AP_ENOMEM;
	core_init(&h->core, sigbits);
	h->alloc = *a;
	atomic_init(&h->recorders, NULL);
	h->id = apx_hist_new_id();
	h->tls_off = offsetof(struct hist_tls, slot) +
		     (size_t)(h->id & (HIST_TLS_SLOTS - 1)) *
			     sizeof(struct hist_tls_slot);
	h->reg_prev = h->reg_next = NULL;
	atomic_init(&h->registered, false);
	stripes_clear(h);
	*out = h;
	return 0;
}

static void core_free(struct hist_core *c, const ap_allocator *a)
{
	for (unsigned i = 0; i < HIST_CHUNKS; i++) {
		_Atomic uint64_t *ch = atomic_load_explicit(&c->chunk[i], RLX);
		if (ch && i != 1) /* chunk 1 lives in chunk 0's allocation */
			a->free(a->ctx, ch, chunk_alloc_bytes(c, i));
	}
}

void ap_hist_destroy(ap_hist *h)
{
	if (!h)
		return;
	apx_hist_tls_forget(h);
	ap_allocator a = h->alloc;
	ap_hist_recorder *r = atomic_load_explicit(&h->recorders,
						   memory_order_acquire);
	while (r) {
		ap_hist_recorder *next = r->next;
		core_free(&r->core, &a);
		a.free(a.ctx, r, sizeof *r);
		r = next;
	}
	core_free(&h->core, &a);
	a.free(a.ctx, h, sizeof *h);
}

unsigned ap_hist_sigbits(const ap_hist *h)
{
	return h->core.hot.sigbits;
}

/* The calling CPU's stripe (any stripe is correct: they are all summed;
 * sched_getcpu's -1 on failure picks the last). Never NULL; saying so lets
 * the compiler drop core_add's recorder branches from the shared entry
 * points (st decides which kind of record core_add makes). */
static inline struct hist_stripe *my_stripe(ap_hist *h)
{
	struct hist_stripe *st =
		hist_stripe(h, (unsigned)sched_getcpu() & (HIST_STRIPES - 1));
	if (!st)
		__builtin_unreachable();
	return st;
}

/*
 * Everything but ap_hist_add's common case: record into the calling
 * thread's recorder of h, binding one first if needed (hist_tls.c); when
 * no recorder can be had (out of memory, no thread-specific key), on the
 * shared atomic path with the sums striped by CPU.
 */
static __attribute__((noinline)) int shared_add_slow(ap_hist *h, uint64_t v,
						      uint64_t n)
{
	ap_hist_recorder *r = hist_tls_find(h);
	if (!r)
		r = apx_hist_tls_bind(h);
	if (AP_LIKELY(r))
		return core_add(&r->core, &h->alloc, v, n, NULL);
	return core_add(&h->core, &h->alloc, v, n, my_stripe(h));
}

/*
 * The shared record: the calling thread's own recorder of h (one TLS load,
 * one tagged cache slot), then the recorder's single-writer common case
 * (allocprof/hist_inline.h). No atomic read-modify-write and no cache line
 * shared with other threads, so it costs about what a per-thread recorder
 * does and scales with threads; snapshots merge the recorders.
 */
int ap_hist_add(ap_hist *h, uint64_t v)
{
	/* v's exponent from h's own (equal) sigbits, computed while the
	 * recorder is being found rather than after: a shorter chain of
	 * dependent loads per record. */
	unsigned e = ap_hist_recorder_exponent(&h->core.hot, v);
	const struct hist_tls_slot *sl = hist_tls_slot(h);
	if (AP_LIKELY(sl->id == h->id) &&
	    AP_LIKELY(ap_hist_recorder_add_common_e(&sl->r->core.hot, v, e)))
		return 0;
	return shared_add_slow(h, v, 1);
}

int ap_hist_add_n(ap_hist *h, uint64_t v, uint64_t n)
{
	return n ? shared_add_slow(h, v, n) : 0;
}

int ap_hist_add_weight(ap_hist *h, uint64_t v, double w)
{
	return core_add_weight(&h->core, &h->alloc, v, w, my_stripe(h));
}

size_t ap_hist_memory(const ap_hist *h)
{
	size_t total = sizeof *h +
		       atomic_load_explicit(&h->core.chunk_bytes, RLX);
	for (const ap_hist_recorder *r = atomic_load_explicit(
		     &h->recorders, memory_order_acquire);
	     r; r = r->next)
		total += sizeof *r +
			 atomic_load_explicit(&r->core.chunk_bytes, RLX);
	return total;
}

static void core_reset(struct hist_core *c)
{
	uint32_t per = UINT32_C(1) << c->hot.sigbits;
	for (unsigned i = 0; i < HIST_CHUNKS; i++) {
		_Atomic uint64_t *ch =
			atomic_load_explicit(&c->chunk[i], memory_order_acquire);
		for (uint32_t k = 0; ch && k < per; k++)
			atomic_store_explicit(&ch[k], 0, RLX);
	}
	atomic_store_explicit(&c->hot.min, UINT64_MAX, RLX);
	atomic_store_explicit(&c->hot.max, 0, RLX);
	atomic_store_explicit(&c->hot.sum_lo, 0, RLX);
	atomic_store_explicit(&c->sum_hi, 0, RLX);
	atomic_store_explicit(&c->hot.sq_lo, 0, RLX);
	atomic_store_explicit(&c->sq_hi, 0, RLX);
	atomic_store_explicit(&c->sq_sat, 0, RLX);
	atomic_store_explicit(&c->carry, 0, RLX);
	atomic_store_explicit(&c->dropped, 0, RLX);
}

void ap_hist_reset(ap_hist *h)
{
	core_reset(&h->core);
	stripes_clear(h);
	for (ap_hist_recorder *r = atomic_load_explicit(&h->recorders,
							memory_order_acquire);
	     r; r = r->next)
		core_reset(&r->core);
}

int apx_hist_add_to_key(ap_hist *h, uint32_t key, uint64_t n)
{
	struct hist_core *c = &h->core;
	unsigned s = c->hot.sigbits;
	_Atomic uint64_t *ch =
		atomic_load_explicit(&c->chunk[key >> s], memory_order_acquire);
	if (!ch && !(ch = core_install_chunk(c, &h->alloc, key >> s)))
		return AP_ENOMEM;
	cnt_add(&ch[key & ((UINT32_C(1) << s) - 1)], n, true);
	return 0;
}

void apx_hist_add_scalars(ap_hist *h, const ap_hist_snap *src)
{
	struct hist_core *c = &h->core;
	if (src->count) {
		atomic_min(&c->hot.min, src->min);
		atomic_max(&c->hot.max, src->max);
	}
	add128(&c->hot.sum_lo, &c->sum_hi, src->sum, true);
	if (src->sq_sat || add128(&c->hot.sq_lo, &c->sq_hi, src->sumsq, true))
		atomic_store_explicit(&c->sq_sat, 1, RLX);
	atomic_fetch_add_explicit(&c->dropped, src->dropped, RLX);
}

/* ---- Per-thread recorders ----------------------------------------------- */

int ap_hist_recorder_get(ap_hist *h, ap_hist_recorder **out)
{
	if (!h || !out)
		return AP_EINVAL;
	/* Reuse a released recorder: claim it by flipping in_use with CAS. */
	for (ap_hist_recorder *r = atomic_load_explicit(&h->recorders,
							memory_order_acquire);
	     r; r = r->next) {
		bool expect = false;
		if (atomic_compare_exchange_strong_explicit(
			    &r->in_use, &expect, true, memory_order_acquire,
			    RLX)) {
			*out = r;
			return 0;
		}
	}
	ap_hist_recorder *r = h->alloc.alloc(h->alloc.ctx, sizeof *r);
	if (!r)
		return AP_ENOMEM;
	core_init(&r->core, h->core.hot.sigbits);
	r->parent = h;
	atomic_init(&r->in_use, true);
	/* Lock-free push; a recorder is never unlinked before destroy. */
	ap_hist_recorder *head = atomic_load_explicit(&h->recorders, RLX);
	do
		r->next = head;
	while (!atomic_compare_exchange_weak_explicit(
		&h->recorders, &head, r, memory_order_release, RLX));
	*out = r;
	return 0;
}

void ap_hist_recorder_release(ap_hist_recorder *r)
{
	if (r)
		atomic_store_explicit(&r->in_use, false, memory_order_release);
}

static __attribute__((noinline)) int recorder_add_slow(ap_hist_recorder *r,
							uint64_t v)
{
	return core_add(&r->core, &r->parent->alloc, v, 1, NULL);
}

/*
 * The per-thread record: the common case is allocprof/hist_inline.h's
 * ap_hist_recorder_add_common, the very code ap_hist_recorder_add_inline
 * compiles into callers (so the two cannot drift apart): the key's exponent,
 * one table load, one counter, the low words of the sum and of the sum of
 * squares, min and max, each a load, an add or compare, and a store. Any
 * rare case (counters not allocated yet, v >= 2^32 so v^2 has a high word,
 * a carry into the high words) goes to the general routine before anything
 * is written, so nothing is done twice.
 */
int ap_hist_recorder_add(ap_hist_recorder *r, uint64_t v)
{
	if (AP_LIKELY(ap_hist_recorder_add_common(&r->core.hot, v)))
		return 0;
	return recorder_add_slow(r, v);
}

/*
 * Batch form: the same fast path with sum, sum of squares, min and max held
 * in registers for the whole batch (128-bit, so no per-value overflow test
 * but one for the sum of squares) and added to the recorder once at the end;
 * a snapshot taken meanwhile sees them lag the buckets, as documented. A
 * value whose exponent has no counters yet goes through the general path.
 */
int ap_hist_recorder_add_many(ap_hist_recorder *r, const uint64_t *v, size_t n)
{
	struct hist_core *c = &r->core;
	unsigned s = c->hot.sigbits;
	uint32_t mask = c->mask;
	hist_u128 sum = 0, sq = 0;
	bool sat = false;
	uint64_t mn = atomic_load_explicit(&c->hot.min, RLX);
	uint64_t mx = atomic_load_explicit(&c->hot.max, RLX);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = v[i];
		unsigned b = 63u ^ (unsigned)__builtin_clzll(x | c->hot.lead);
		unsigned e = b - s;
		/* Below 2^32 the inline path's biased table finds the counter
		 * with one shift; above, the plain table. */
		uintptr_t base = atomic_load_explicit(&c->hot.base[e],
						      memory_order_acquire);
		_Atomic uint64_t *cnt;
		if (AP_LIKELY(base)) {
			cnt = (_Atomic uint64_t *)(base + (uintptr_t)(x >> e) *
								sizeof(uint64_t));
		} else {
			_Atomic uint64_t *ch = atomic_load_explicit(
				&c->chunk[e + (unsigned)(x >> b)],
				memory_order_acquire);
			if (AP_UNLIKELY(!ch)) {
				/* The general path updates min and max in
				 * place: hand it the batch's so far first. */
				atomic_store_explicit(&c->hot.min, mn, RLX);
				atomic_store_explicit(&c->hot.max, mx, RLX);
				int one = recorder_add_slow(r, x);
				rc = one ? one : rc;
				mn = atomic_load_explicit(&c->hot.min, RLX);
				mx = atomic_load_explicit(&c->hot.max, RLX);
				continue;
			}
			cnt = &ch[(x >> e) & mask];
		}
		atomic_store_explicit(cnt, atomic_load_explicit(cnt, RLX) + 1, RLX);
		sum += x;
		sat |= __builtin_add_overflow(sq, (hist_u128)x * x, &sq);
		mn = x < mn ? x : mn;
		mx = x > mx ? x : mx;
	}
	atomic_store_explicit(&c->hot.min, mn, RLX);
	atomic_store_explicit(&c->hot.max, mx, RLX);
	add128(&c->hot.sum_lo, &c->sum_hi, sum, false);
	if (sat || add128(&c->hot.sq_lo, &c->sq_hi, sq, false))
		atomic_store_explicit(&c->sq_sat, 1, RLX);
	return rc;
}

int ap_hist_recorder_add_n(ap_hist_recorder *r, uint64_t v, uint64_t n)
{
	return n ? core_add(&r->core, &r->parent->alloc, v, n, NULL) : 0;
}

int ap_hist_recorder_add_weight(ap_hist_recorder *r, uint64_t v, double w)
{
	return core_add_weight(&r->core, &r->parent->alloc, v, w, NULL);
}

/* ---- Snapshot ----------------------------------------------------------- */

/* Add one pair of 128-bit sums (lo/hi words) to the snapshot's; true if
 * the sum of squares overflowed. */
static bool snap_fold_sums(ap_hist_snap *s, const _Atomic uint64_t *sum_lo,
			   const _Atomic uint64_t *sum_hi,
			   const _Atomic uint64_t *sq_lo,
			   const _Atomic uint64_t *sq_hi)
{
	hist_u128 sum = (hist_u128)atomic_load_explicit(sum_hi, RLX) << 64 |
			atomic_load_explicit(sum_lo, RLX);
	hist_u128 sq = (hist_u128)atomic_load_explicit(sq_hi, RLX) << 64 |
		       atomic_load_explicit(sq_lo, RLX);
	s->sum += sum;
	return __builtin_add_overflow(s->sumsq, sq, &s->sumsq);
}

/* Fold one core's scalar counters into the snapshot. */
static void snap_fold_scalars(ap_hist_snap *s, const struct hist_core *c)
{
	uint64_t mn = atomic_load_explicit(&c->hot.min, RLX);
	uint64_t mx = atomic_load_explicit(&c->hot.max, RLX);
	if (mn < s->min)
		s->min = mn;
	if (mx > s->max)
		s->max = mx;
	if (snap_fold_sums(s, &c->hot.sum_lo, &c->sum_hi, &c->hot.sq_lo, &c->sq_hi) ||
	    atomic_load_explicit(&c->sq_sat, RLX))
		s->sq_sat = true;
	s->dropped += atomic_load_explicit(&c->dropped, RLX);
}

/* Add chunk ci of core c into acc (2^sigbits entries). */
static bool chunk_accumulate(const struct hist_core *c, unsigned ci,
			     uint64_t *acc, bool *overflow)
{
	_Atomic uint64_t *ch =
		atomic_load_explicit(&c->chunk[ci], memory_order_acquire);
	if (!ch)
		return false;
	uint32_t per = UINT32_C(1) << c->hot.sigbits;
	for (uint32_t k = 0; k < per; k++)
		if (__builtin_add_overflow(acc[k],
					   atomic_load_explicit(&ch[k], RLX),
					   &acc[k]))
			*overflow = true;
	return true;
}

int ap_hist_snapshot(const ap_hist *h, const ap_allocator *alloc,
		     ap_hist_snap **out)
{
	if (!h || !out)
		return AP_EINVAL;
	const ap_allocator *a = apx_hist_alloc_or_libc(alloc);
	unsigned s = h->core.hot.sigbits;
	uint32_t per = UINT32_C(1) << s;
	ap_hist_snap *snap;
	int rc = apx_hist_snap_new(a, s, 64, &snap);
	if (rc)
		return rc;
	uint64_t *acc = a->alloc(a->ctx, per * sizeof *acc);
	if (!acc) {
		ap_hist_snap_destroy(snap);
		return AP_ENOMEM;
	}
	const ap_hist_recorder *head =
		atomic_load_explicit(&h->recorders, memory_order_acquire);
	bool overflow = false;
	for (unsigned ci = 0; ci < 65 - s && !rc; ci++) {
		memset(acc, 0, per * sizeof *acc);
		bool any = chunk_accumulate(&h->core, ci, acc, &overflow);
		for (const ap_hist_recorder *r = head; r; r = r->next)
			any |= chunk_accumulate(&r->core, ci, acc, &overflow);
		for (uint32_t k = 0; any && k < per && !rc; k++)
			if (acc[k])
				rc = apx_hist_snap_push(snap, (ci << s) | k, acc[k]);
	}
	a->free(a->ctx, acc, per * sizeof *acc);
	snap_fold_scalars(snap, &h->core);
	for (unsigned i = 0; i < HIST_STRIPES; i++) {
		const struct hist_stripe *st = hist_stripe(h, i);
		if (snap_fold_sums(snap, &st->sum_lo, &st->sum_hi, &st->sq_lo,
				   &st->sq_hi))
			snap->sq_sat = true;
	}
	for (const ap_hist_recorder *r = head; r; r = r->next)
		snap_fold_scalars(snap, &r->core);
	if (!rc && overflow)
		rc = AP_ERANGE;
	if (rc) {
		ap_hist_snap_destroy(snap);
		return rc;
	}
	if (!snap->n) { /* empty (or only concurrent partial updates) */
		snap->min = snap->max = 0;
		snap->sum = snap->sumsq = 0;
		snap->sq_sat = false;
	} else {
		/* A record racing with this snapshot may have bumped its bucket
		 * but not yet min/max: keep [min, max] meeting the buckets. */
		uint64_t lo, hi;
		hist_bounds(s, snap->keys[0], &lo, &hi);
		if (snap->min > hi)
			snap->min = lo;
		hist_bounds(s, snap->keys[snap->n - 1], &lo, &hi);
		if (snap->max < lo)
			snap->max = hi;
	}
	*out = snap;
	return 0;
}
