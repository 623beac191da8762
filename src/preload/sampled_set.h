/*
 * sampled_set.h: the set of live sampled pointers, and each one's record.
 *
 * free() must decide "was this pointer sampled?" for every call, in O(1) and
 * without locks (docs/DESIGN.md). This is design (1) of the two the design asks to
 * compare: a lock-free open-addressing hash set of addresses, as Chromium's
 * PoissonAllocationSampler keeps. Lookups take no lock and touch one table
 * pointer plus, almost always, one cache line of keys.
 *
 * Writers (a sampled allocation's insert, its free's remove) are serialised
 * by one mutex (in the runtime the stack table's, which the sampled slow
 * path takes anyway: sampled_set.mu), and a single writer at a time is what makes
 * tombstone-free deletion safe. A removed slot becomes empty, not a
 * tombstone, whenever the next slot is empty (no probe chain can pass
 * through it then), and tombstones just before it are emptied with it; only
 * removals inside a cluster leave tombstones, and those vanish as the
 * cluster drains. So a program with constant churn does not fill the table
 * with tombstones, and the copy that clears them is rare. Every key store is
 * atomic, so lock-free readers always see either the old or the new value.
 *
 * Growth (and the rare tombstone clean-up) copies the live keys into a fresh
 * table and publishes it with one release store. Readers never wait: a
 * reader still probing a retired table sees every key that was live when it
 * loaded the table pointer, which is all it needs, because only the owner of
 * pointer p looks p up (see set_contains). Retired tables are recycled only
 * after a grace period (SET_GRACE_NS); one that cannot be kept is leaked
 * rather than unmapped, so a stale reader can never fault or read garbage.
 *
 * The record of each sampled pointer (its stack bucket, HT weight, u,
 * usable size, allocation time) lives in a parallel array, read and written
 * only by the owner of the pointer.
 *
 * A set may carry a granule filter (the runtime's does), in two parts;
 * it folds the address space every 4 GiB (indexes are taken from the low
 * 32 bits of p, which makes each a 32-bit move and a shift):
 * - word[g], for each 4 KiB granule g = set_filter_index(p): 16 bits
 *   describing the live keys whose granule is g. Its low byte counts
 *   them; its high byte has a bit for each 512-byte eighth of the granule
 *   where a live key starts (set_filter_bit), set on insert and cleared,
 *   all together, only when the count comes back to zero.
 * - any[j], for each 8 KiB window j = set_filter_any_index(p): how many
 *   of its two granules have a nonzero word. This is what free() reads:
 *   a byte per 8 KiB puts 512 KiB of address space in a cache line, where
 *   the words put 128 KiB, so the lines a program's frees read stay in the
 *   first-level cache far more often (a heap of 1 GiB reads 128 KiB of
 *   bytes, not 512 KiB of words). A bit per granule would pack them
 *   denser still, but costs free three more instructions.
 * A zero byte means no key can be p, which lets free() skip the set for
 * almost every pointer with one load. Behind a nonzero one, p can be a
 * key only if its eighth's bit is set in word[g], which the runtime tests
 * first on its slow path (rt_classify): a sampled block shares its window
 * with dozens of the program's small blocks, and each of their frees
 * otherwise went on to the range's and the set's cache lines. Writers
 * update both parts under the set's mutex, after storing the key on
 * insert and before clearing it on remove, with relaxed atomics: a
 * compare-and-swap on the word, and an add or subtract on the byte when
 * the word changes between zero and not, because set_filter_claim, which
 * may run outside the mutex, saturates words (by an exchange, counting in
 * the byte only a word that was zero). A reader is only ever asked about
 * its own pointer, whose insert happened-before, so it sees both parts
 * nonzero while p is in the set. A word at 65535 (every bit) stays there
 * for good, which only costs lookups: set_filter_claim puts the granules
 * of the runtime's own range there, and a count reaching 255 does too (a
 * granule holds up to 256 blocks of 16 bytes, and aliases 4 GiB apart
 * share its word).
 */
#ifndef AP_PRELOAD_SAMPLED_SET_H
#define AP_PRELOAD_SAMPLED_SET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"
#include "rt_lock.h"

/* Recycling delay for retired tables: far above any free() fast path. */
#define SET_GRACE_NS 2000000000ULL
#define SET_MAX_RETIRED 32

struct site;

/* What the runtime keeps for one live sampled allocation. */
typedef struct sample_rec {
	struct site *site; /* NULL = a bootstrap-pool block, not a sample */
	double weight;     /* 1/pi (HT) */
	uint64_t size;     /* requested size (a site holds a class of sizes) */
	uint64_t u;        /* size - offset */
	uint64_t usable;   /* malloc_usable_size underneath */
	uint64_t t_ns;     /* CLOCK_MONOTONIC at allocation */
} sample_rec;

typedef struct set_table {
	size_t mask;             /* capacity - 1, capacity a power of two */
	unsigned shift;          /* 64 - log2(capacity) */
	size_t used;             /* live + tombstones (writers only) */
	atomic_size_t live;      /* read without the lock for statistics */
	size_t map_len;          /* bytes mapped for this table */
	uint64_t retired_ns;     /* when it was replaced, 0 = current */
	sample_rec *recs;        /* parallel to keys */
	_Atomic uintptr_t keys[]; /* 0 = empty, 1 = tombstone, else a pointer */
} set_table;

typedef struct sampled_set {
	/* The current table, published as its key array (&table->keys[0]) so
	 * the free() fast path indexes it with no displacement; set_header
	 * gets back to the table. */
	_Atomic uintptr_t *_Atomic keys;
	rt_lock lock;               /* serialises writers and copies, */
	rt_lock *mu;                /* unless mu points elsewhere: the lock
				     * writers take (&lock after set_init;
				     * the runtime shares its stack table's,
				     * so that a sample takes one lock for
				     * its record and its entry) */
	set_table *retired[SET_MAX_RETIRED];
	size_t nretired;
	atomic_uint_fast64_t grows; /* statistics, for tests and benches */
	struct set_filter *filter;  /* NULL, or the granule filter (above) */
} sampled_set;

/* The granule filter (above): 2^20 granules of 4 KiB, and a byte of
 * any[] for each 8 KiB window of address space (two granules). */
#define SET_FILTER_SHIFT 12u
#define SET_FILTER_SIZE ((size_t)1 << (32 - SET_FILTER_SHIFT))
#define SET_FILTER_ANY_SHIFT 13u
#define SET_FILTER_ANY_SIZE ((size_t)1 << (32 - SET_FILTER_ANY_SHIFT))

typedef struct set_filter {
	uint8_t any[SET_FILTER_ANY_SIZE];   /* nonzero words of its granules (512 KiB) */
	uint16_t word[SET_FILTER_SIZE];     /* count and eighths (2 MiB) */
} set_filter;

static inline size_t set_filter_index(uintptr_t p)
{
	return (size_t)((uint32_t)p >> SET_FILTER_SHIFT);
}

static inline size_t set_filter_any_index(uintptr_t p)
{
	return (size_t)((uint32_t)p >> SET_FILTER_ANY_SHIFT);
}

/* Is p's byte of any[] nonzero? A relaxed load (tests and slow paths;
 * the runtime's free reads it plainly, runtime_core.h). */
static inline bool set_filter_any(const set_filter *f, uintptr_t p)
{
	return __atomic_load_n(&f->any[set_filter_any_index(p)], __ATOMIC_RELAXED) != 0;
}

/* p's granule's word, with a relaxed load. */
static inline uint16_t set_filter_word(const set_filter *f, uintptr_t p)
{
	return __atomic_load_n(&f->word[set_filter_index(p)], __ATOMIC_RELAXED);
}

/* The filter word's parts (above): the live count, and p's eighth. */
#define SET_FILTER_COUNT 0xffu
static inline uint16_t set_filter_bit(uintptr_t p)
{
	return (uint16_t)(0x100u << ((p >> (SET_FILTER_SHIFT - 3)) & 7u));
}

/* The empty table every set starts from (capacity 2, never written). */
extern set_table set_empty_table;

/* Saturate the counters of every granule of [from, to) for good: the
 * runtime claims its own range this way, so that free() sends its pointers
 * to the slow path with the same one test (runtime_core.h). */
void set_filter_claim(set_filter *filter, uintptr_t from, uintptr_t to);

/* An empty set; filter: NULL, or a zeroed filter the set keeps up to
 * date (it must outlive the set). */
void set_init(sampled_set *s, set_filter *filter);

static inline set_table *set_header(_Atomic uintptr_t *keys)
{
	return (set_table *)(void *)((char *)keys - offsetof(set_table, keys));
}

/* The current table (writers: relaxed under the lock; readers: acquire). */
static inline set_table *set_current(const sampled_set *s, memory_order mo)
{
	return set_header(atomic_load_explicit(&s->keys, mo));
}

/*
 * Slot of an address: Fibonacci hashing (Knuth 6.4), the top log2(capacity)
 * bits of p * 2^64/phi. Taking the top bits needs no mask and is unaffected
 * by the always-zero low bits of aligned pointers. shift = 64 - log2(cap),
 * so capacities start at 2 (the empty table) to keep the shift below 64.
 */
static inline size_t set_slot(const set_table *t, uintptr_t p)
{
	return (size_t)(((uint64_t)p * 0x9E3779B97F4A7C15ULL) >> t->shift);
}

/*
 * Lock-free lookup: is p in the set? Meant for free(p) by the owner of p:
 * p's insert happened-before (the program handed p over), so the current or
 * a retired table holds it. Relaxed loads suffice for the same reason.
 */
static inline bool set_contains(const sampled_set *s, const void *p)
{
	_Atomic uintptr_t *keys = atomic_load_explicit(&s->keys, memory_order_acquire);
	const set_table *t = set_header(keys);
	uintptr_t key = (uintptr_t)p;
	size_t i = set_slot(t, key);
	uintptr_t k = atomic_load_explicit(&keys[i], memory_order_relaxed);
	/* The common case, a miss on the first probe, falls straight through.
	 * Empty is tested first so that free(NULL) never matches. */
	if (AP_LIKELY(k == 0))
		return false;
	for (;;) {
		if (k == key)
			return true;
		i = (i + 1) & t->mask;
		k = atomic_load_explicit(&keys[i], memory_order_relaxed);
		if (k == 0)
			return false;
	}
}

/* Insert p (not already present) with its record. 0 or AP_ENOMEM. */
int set_insert(sampled_set *s, const void *p, const sample_rec *rec);
/*
 * Remove p and copy its record out. true if p was present; false if not
 * (a concurrent remove of the same p, i.e. a double free, or never sampled).
 */
bool set_remove(sampled_set *s, const void *p, sample_rec *rec_out);
/* The same, for a caller that holds *s->mu. */
int set_insert_locked(sampled_set *s, const void *p, const sample_rec *rec);
bool set_remove_locked(sampled_set *s, const void *p, sample_rec *rec_out);
/* Copy p's record without removing it (for its owner). true if present. */
bool set_get(sampled_set *s, const void *p, sample_rec *rec_out);
/* Number of live entries (approximate while writers run). */
size_t set_size(const sampled_set *s);
/* Capacity of the current table. */
size_t set_capacity(const sampled_set *s);
/* Bytes the set has mapped: its current table (none while it is the
 * static empty one) and the retired tables kept for their grace period.
 * Takes the writers' lock; not for a fork handler or a signal handler. */
size_t set_mapped_bytes(sampled_set *s);

/* Slots currently holding tombstones (for tests and statistics). */
size_t set_tombstones(sampled_set *s);

/* Hold / release the writers' lock (*s->mu): for a walk over the live
 * records. (The runtime's fork handlers hold it as the stack table's.) */
void set_lock_all(sampled_set *s);
void set_unlock_all(sampled_set *s);

/* Time source for the grace period (CLOCK_MONOTONIC ns). */
uint64_t set_now_ns(void);

#endif
