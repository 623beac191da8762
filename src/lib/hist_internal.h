/*
 * hist_internal.h: what the hist*.c files share and nothing else needs: the
 * value<->key arithmetic (inline, it is the hot path), the layout of the live
 * histogram and of snapshots, 128-bit helpers and a growable output buffer
 * for the encoders.
 *
 * Layout of the live histogram (hist.c): keys are grouped in "chunks" of
 * 2^sigbits consecutive keys, one per binary exponent (chunk c = key >>
 * sigbits holds the values whose top bit is bit sigbits + c - 1; chunks 0 and
 * 1 hold the values below 2^(sigbits+1), one per key). A chunk's counter
 * array is allocated the first time a value lands in it, so memory follows
 * the range of the data, never the whole uint64 range (hg64's design,
 * [R5]).
 */
#ifndef ALLOCPROF_HIST_INTERNAL_H
#define ALLOCPROF_HIST_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/hist.h"
#include "allocprof/hist_inline.h"

__extension__ typedef unsigned __int128 hist_u128;

#define HIST_U128_MAX (~(hist_u128)0)
#define HIST_CHUNKS 64 /* 65 - sigbits <= 64 chunks */

/*
 * Value -> key: the exponent e is how far v must be shifted right to keep
 * sigbits + 1 significant bits (0 for small v, since bit `sigbits` is forced
 * on); the key is e above the shifted mantissa, i.e. a tiny float. One OR,
 * one CLZ, a subtraction, two shifts and an add; no branch, no division
 * (Khuong's bucketing as used by hg64, [R5]).
 */
static inline uint32_t hist_key(unsigned s, uint64_t v)
{
	/* 63 ^ clz == 63 - clz for clz in 0..63: compilers emit one BSR. */
	unsigned e = (63u ^ (unsigned)__builtin_clzll(v | (UINT64_C(1) << s))) - s;
	return (uint32_t)(((uint64_t)e << s) + (v >> e));
}

/* Inclusive bounds of key (key < hist_nkeys(s)); never overflows. */
static inline void hist_bounds(unsigned s, uint32_t key, uint64_t *lo,
			       uint64_t *hi)
{
	uint32_t c = key >> s;
	unsigned e = c ? c - 1 : 0;
	uint64_t m = key - ((uint64_t)e << s);
	*lo = m << e;
	*hi = *lo + ((UINT64_C(1) << e) - 1);
}

static inline uint32_t hist_nkeys(unsigned s)
{
	return (uint32_t)(65u - s) << s;
}

static inline bool hist_sigbits_ok(unsigned s)
{
	return s >= AP_HIST_SIGBITS_MIN && s <= AP_HIST_SIGBITS_MAX;
}

#ifndef AP_HIST_INLINE_RECORD
#error "liballocprof is built as C with GNU builtins and C11 atomics"
#endif

/*
 * One set of counters. Its first member is the hot part published by
 * allocprof/hist_inline.h (the inline record path addresses a recorder through
 * it): the per-exponent counter table base[] in the biased form that path
 * uses, min, max and the low words of the sums. The rest is the library's
 * own: the high words, the weight carry, the flags and the plain table of
 * counter arrays chunk[] (chunk c holds keys c << sigbits ..; chunks 0 and
 * 1 are one allocation, so that base[0] covers both). Fields written on
 * every record sit on their own cache line, away from the read-mostly
 * tables and min/max, so that contending writers do not also invalidate
 * what every record reads. Padding is explicit (no _Alignas: the allocator
 * only promises max_align_t).
 */
struct hist_core {
	struct ap_hist_recorder_hot hot;
	_Atomic uint64_t sum_hi, sq_hi;
	_Atomic uint64_t carry;    /* 32.32 fixed-point weight remainder */
	_Atomic uint64_t sq_sat;   /* sticky: sum of squares overflowed */
	_Atomic uint64_t dropped;  /* values lost to allocation failure */
	_Atomic size_t chunk_bytes;
	char pad2[64];
	uint32_t mask; /* (1 << sigbits) - 1 */
	_Atomic(_Atomic uint64_t *) chunk[HIST_CHUNKS];
};

struct ap_hist_recorder {
	struct hist_core core; /* first: see allocprof/hist_inline.h */
	ap_hist *parent;
	ap_hist_recorder *next; /* immutable once published */
	atomic_bool in_use;
};

/*
 * The shared histogram's sums, striped: a writer adds its value's sum, sum
 * of squares and weight remainder into the stripe of the CPU it runs on
 * (sched_getcpu, a thread-local read with glibc's rseq), so writers on
 * different CPUs do not bounce one cache line between them on every record
 * (with one line, 2 threads took 5-7x one thread's time). Snapshots add the
 * stripes to the core's own sums (which merges and the recorders' folding
 * still use). Each stripe owns a whole cache line: the stripes live in
 * stripe_mem at the first 64-byte boundary (the allocator promises only
 * max_align_t), see hist_stripe().
 */
#define HIST_STRIPES 4 /* a power of two */
#define HIST_LINE 64
struct hist_stripe {
	_Atomic uint64_t sum_lo, sum_hi, sq_lo, sq_hi;
	_Atomic uint64_t carry; /* 32.32 fixed-point weight remainder */
};
_Static_assert(sizeof(struct hist_stripe) <= HIST_LINE, "a stripe is one line");

struct ap_hist {
	struct hist_core core;
	ap_allocator alloc;
	_Atomic(ap_hist_recorder *) recorders;
	uint64_t id; /* unique in the process, never reused (hist_tls.c) */
	size_t tls_off; /* byte offset of its slot in a struct hist_tls */
	/* In hist_tls.c's registry of histograms that threads have bound
	 * recorders of: links and flag written under its lock only. */
	ap_hist *reg_prev, *reg_next;
	atomic_bool registered;
	unsigned char stripe_mem[(HIST_STRIPES + 1) * HIST_LINE];
};

/*
 * The shared path's per-thread recorders (hist_tls.c): ap_hist_add records
 * into a recorder of h owned by the calling thread, found through a small
 * direct-mapped cache per thread, indexed and tagged by h->id (ids are
 * never reused, so a slot of a destroyed histogram can never match again).
 * Only the owner thread reads or writes its cache. The cache is heap
 * memory reached through one initial-exec TLS pointer, so the hot path is
 * one %fs-relative load, and a library loaded with dlopen needs only 8
 * bytes of static TLS.
 */
#define HIST_TLS_SLOTS 32 /* a power of two */
struct hist_tls_slot {
	uint64_t id; /* 0: empty */
	ap_hist_recorder *r;
};
struct hist_tls {
	struct hist_tls_slot slot[HIST_TLS_SLOTS];
};
/* A thread without a cache of its own points at this one, whose slots are
 * all empty (id 0 matches no histogram), so the record path needs no test
 * for "no cache yet". Never written. */
extern struct hist_tls apx_hist_tls_none __attribute__((visibility("hidden")));
extern __thread struct hist_tls *apx_hist_tls
	__attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The calling thread's slot for h; its recorder is bound (non-NULL) iff
 * slot->id == h->id. */
static inline const struct hist_tls_slot *hist_tls_slot(const ap_hist *h)
{
	/* = &apx_hist_tls->slot[h->id % HIST_TLS_SLOTS], the index
	 * precomputed at creation (two instructions fewer per record) */
	return (const struct hist_tls_slot *)(void *)((char *)apx_hist_tls +
						      h->tls_off);
}

/* The calling thread's recorder of h, or NULL if it has none bound. */
static inline ap_hist_recorder *hist_tls_find(const ap_hist *h)
{
	const struct hist_tls_slot *sl = hist_tls_slot(h);
	return sl->id == h->id ? sl->r : NULL;
}

/* A fresh histogram id (never 0). */
uint64_t apx_hist_new_id(void);
/* Bind a recorder of h to the calling thread (evicting the slot's previous
 * binding, whose recorder is released if its histogram still exists) and
 * return it; NULL when none could be had (then record on the shared
 * atomic path). Released at thread exit: its counts stay in h. */
ap_hist_recorder *apx_hist_tls_bind(ap_hist *h);
/* ap_hist_destroy: take h out of the registry, so that no thread's exit
 * or eviction touches its recorders any more. */
void apx_hist_tls_forget(ap_hist *h);

static inline struct hist_stripe *hist_stripe(const ap_hist *h, unsigned i)
{
	uintptr_t at = ((uintptr_t)h->stripe_mem + HIST_LINE - 1) &
		       ~(uintptr_t)(HIST_LINE - 1);
	return (struct hist_stripe *)(at + (uintptr_t)i * HIST_LINE);
}

/*
 * Snapshot: the non-empty buckets in increasing key order, with running
 * totals (cum[i] = counts[0] + ... + counts[i]) for rank queries by binary
 * search.
 */
struct ap_hist_snap {
	ap_allocator alloc;
	unsigned sigbits;
	size_t n, cap;
	uint32_t *keys;
	uint64_t *counts;
	uint64_t *cum;
	uint64_t count, min, max, dropped;
	hist_u128 sum, sumsq;
	bool sq_sat;
};

const ap_allocator *apx_hist_alloc_or_libc(const ap_allocator *a);

/* For merging (hist_merge.c), thread-safe like ap_hist_add: add n to key's
 * counter (AP_ENOMEM), and fold exact scalars into h. */
int apx_hist_add_to_key(ap_hist *h, uint32_t key, uint64_t n);
void apx_hist_add_scalars(ap_hist *h, const ap_hist_snap *src);

/* A new empty snapshot (min = UINT64_MAX, max = 0), room for cap buckets. */
int apx_hist_snap_new(const ap_allocator *a, unsigned sigbits, size_t cap,
		  ap_hist_snap **out);
/* Append a bucket (keys strictly increasing, count > 0). AP_ERANGE if the
 * total count would pass 2^64 - 1; AP_ENOMEM. */
int apx_hist_snap_push(ap_hist_snap *s, uint32_t key, uint64_t count);

/* Index of the first bucket whose key is >= key (n if none). */
size_t apx_hist_snap_lower_bound(const ap_hist_snap *s, uint32_t key);

/* Check what a decoder built: buckets meet [min, max], sum and sum of
 * squares are possible for that count and range. 0 or AP_ECORRUPT. */
int apx_hist_snap_validate(const ap_hist_snap *s);

/* Growable byte buffer for the encoders; the first failure sticks in err. */
struct hist_buf {
	const ap_allocator *a;
	unsigned char *p;
	size_t len, cap;
	int err;
};
void apx_hist_buf_init(struct hist_buf *b, const ap_allocator *a);
void apx_hist_buf_put(struct hist_buf *b, const void *data, size_t n);
void apx_hist_buf_puts(struct hist_buf *b, const char *str);
void apx_hist_buf_printf(struct hist_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void apx_hist_buf_u128(struct hist_buf *b, hist_u128 v); /* decimal */
/* NUL-terminate and hand the buffer over (or free it and return err). */
int apx_hist_buf_finish(struct hist_buf *b, unsigned char **out, size_t *len);

/* Decimal digits of v into d (>= 40 bytes); returns the length. */
size_t apx_hist_u128_format(hist_u128 v, char *d);

/* Proportional share: floor(count * part / whole) for part <= whole, whole > 0. */
static inline uint64_t hist_share(uint64_t count, uint64_t part, uint64_t whole)
{
	return (uint64_t)((hist_u128)count * part / whole);
}

#endif
