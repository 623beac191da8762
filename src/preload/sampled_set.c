/*
 * sampled_set.c: lock-free open-addressing set of live sampled pointers
 * (design notes in sampled_set.h).
 *
 * Writers hold the set's mutex; readers (set_contains) hold nothing. Keys
 * are stored with release semantics after the record is written, so a
 * reader that finds p also sees p's record (the owner's later remove reads
 * it); keys are loaded with acquire by writers.
 *
 * Linear probing with at most 50% claimed slots keeps the expected probe
 * length of a miss, the free() fast path, near 2.5 slots (Knuth's
 * 1/2 (1 + 1/(1-a)^2) at a = 1/2), and usually within one cache line.
 */
#include "sampled_set.h"

#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "allocprof/common.h"

#define KEY_EMPTY ((uintptr_t)0)
#define KEY_TOMB ((uintptr_t)1)
#define MIN_CAP ((size_t)64)

/* GCC/Clang extension: a static object may initialise its flexible array
 * member, which gives the empty table the one key slot lookups read. */
set_table set_empty_table = { .mask = 1, .shift = 63, .keys = { 0, 0 } };

uint64_t set_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void set_init(sampled_set *s, set_filter *filter)
{
	/* Every field: a set on the stack starts as garbage (no retired
	 * tables, no growths yet). */
	memset(s, 0, sizeof *s);
	atomic_store(&s->keys, set_empty_table.keys);
	rt_lock_init(&s->lock);
	s->mu = &s->lock;
	s->filter = filter;
}

/* Granule g's word went from zero to nonzero (+1) or back (-1): count
 * it in its byte of any[]. A read-modify-write, since the byte's other
 * granules may change at once outside the set's mutex (a claim). */
static void filter_mark(set_filter *f, size_t g, int d)
{
	uint8_t *a = &f->any[g >> (SET_FILTER_ANY_SHIFT - SET_FILTER_SHIFT)];
	if (d > 0)
		__atomic_fetch_add(a, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_sub(a, 1, __ATOMIC_RELAXED);
}

void set_filter_claim(set_filter *filter, uintptr_t from, uintptr_t to)
{
	if (to <= from)
		return;
	uintptr_t first = from >> SET_FILTER_SHIFT, last = (to - 1) >> SET_FILTER_SHIFT;
	for (uintptr_t g = first; g <= last && g - first < SET_FILTER_SIZE; g++) {
		size_t i = (size_t)(g & (SET_FILTER_SIZE - 1));
		/* The word before the byte: a free that sees the byte goes
		 * on to read the word (rt_classify). An exchange, so that a
		 * word a set entry (4 GiB away) had made nonzero is not
		 * counted twice. */
		if (__atomic_exchange_n(&filter->word[i], (uint16_t)UINT16_MAX,
					__ATOMIC_RELAXED) == 0)
			filter_mark(filter, i, +1);
	}
}

/* Count key in (+1, its eighth's bit set) or out (-1; the bits cleared
 * with the last key) of its granule's word, and count the word's changes
 * between zero and nonzero in any[]; the set's mutex is held. A
 * compare-and-swap, because a claim may saturate the word meanwhile; a
 * saturated word stays (sampled_set.h). */
static void filter_count(sampled_set *s, uintptr_t key, int d)
{
	if (!s->filter)
		return;
	size_t g = set_filter_index(key);
	uint16_t *f = &s->filter->word[g];
	uint16_t c = __atomic_load_n(f, __ATOMIC_RELAXED), w;
	do {
		unsigned n = c & SET_FILTER_COUNT;
		if (c == UINT16_MAX || (d < 0 && n == 0))
			return;
		if (d > 0)
			w = n + 1 >= SET_FILTER_COUNT ? (uint16_t)UINT16_MAX
						      : (uint16_t)((c | set_filter_bit(key)) + 1);
		else
			w = n == 1 ? 0 : (uint16_t)(c - 1);
	} while (!__atomic_compare_exchange_n(f, &c, w, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	if ((c == 0) != (w == 0))
		filter_mark(s->filter, g, w != 0 ? +1 : -1);
}

static size_t table_bytes(size_t cap)
{
	size_t b = sizeof(set_table) + cap * sizeof(uintptr_t) +
		   cap * sizeof(sample_rec);
	return (b + 4095) & ~(size_t)4095;
}

static unsigned log2_exact(size_t cap)
{
	unsigned l = 0;
	while (((size_t)1 << l) < cap)
		l++;
	return l;
}

/* A zeroed table of capacity cap: a recycled one past its grace period, or
 * a fresh mapping. Caller holds the exclusive lock. */
static set_table *table_get(sampled_set *s, size_t cap)
{
	size_t len = table_bytes(cap);
	uint64_t now = set_now_ns();
	set_table *t = NULL;
	for (size_t i = 0; i < s->nretired; i++) {
		set_table *r = s->retired[i];
		if (r->map_len == len && now - r->retired_ns >= SET_GRACE_NS) {
			s->retired[i] = s->retired[--s->nretired];
			/* Dropping the pages zeroes them; a reader that is somehow
			 * still here past the grace period reads zeros, not garbage. */
			madvise(r, len, MADV_DONTNEED);
			t = r;
			break;
		}
	}
	if (!t) {
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		t = m;
	}
	t->mask = cap - 1;
	t->shift = 64 - log2_exact(cap); /* cap >= MIN_CAP: shift < 64 */
	t->map_len = len;
	t->retired_ns = 0;
	t->used = 0;
	atomic_store_explicit(&t->live, 0, memory_order_relaxed);
	t->recs = (sample_rec *)(void *)((unsigned char *)t + sizeof(set_table) +
					 cap * sizeof(uintptr_t));
	return t;
}

static void table_retire(sampled_set *s, set_table *t)
{
	if (t == &set_empty_table)
		return;
	uint64_t now = set_now_ns();
	t->retired_ns = now;
	if (s->nretired == SET_MAX_RETIRED) {
		/* Make room: the oldest goes if its grace period is over; if not,
		 * it is forgotten but stays mapped and intact (a small leak, and
		 * only after many copies within one grace period) because a
		 * reader may still be probing it. */
		size_t oldest = 0;
		for (size_t i = 1; i < s->nretired; i++)
			if (s->retired[i]->retired_ns < s->retired[oldest]->retired_ns)
				oldest = i;
		set_table *o = s->retired[oldest];
		if (now - o->retired_ns >= SET_GRACE_NS)
			munmap(o, o->map_len);
		s->retired[oldest] = s->retired[--s->nretired];
	}
	s->retired[s->nretired++] = t;
}

/* Copy live entries into a table sized for them; exclusive lock held. */
static int rehash(sampled_set *s, size_t want_live)
{
	set_table *old = set_current(s, memory_order_relaxed);
	size_t live = atomic_load_explicit(&old->live, memory_order_relaxed);
	if (want_live < live + 1)
		want_live = live + 1;
	size_t cap = MIN_CAP;
	while (cap < want_live * 4)
		cap <<= 1;
	set_table *t = table_get(s, cap);
	if (!t)
		return AP_ENOMEM;
	size_t n = 0;
	if (old != &set_empty_table) {
		for (size_t i = 0; i <= old->mask; i++) {
			uintptr_t k = atomic_load_explicit(&old->keys[i], memory_order_relaxed);
			if (k == KEY_EMPTY || k == KEY_TOMB)
				continue;
			size_t j = set_slot(t, k);
			while (atomic_load_explicit(&t->keys[j], memory_order_relaxed) != KEY_EMPTY)
				j = (j + 1) & t->mask;
			t->recs[j] = old->recs[i];
			atomic_store_explicit(&t->keys[j], k, memory_order_relaxed);
			n++;
		}
	}
	t->used = n;
	atomic_store_explicit(&t->live, n, memory_order_relaxed);
	atomic_store_explicit(&s->keys, t->keys, memory_order_release);
	atomic_fetch_add_explicit(&s->grows, 1, memory_order_relaxed);
	table_retire(s, old);
	return 0;
}

int set_insert_locked(sampled_set *s, const void *p, const sample_rec *rec)
{
	uintptr_t key = (uintptr_t)p;
	if (key <= KEY_TOMB)
		return AP_EINVAL;
	set_table *t = set_current(s, memory_order_relaxed);
	if (t == &set_empty_table || t->used + 1 > (t->mask + 1) / 2) {
		int rc = rehash(s, atomic_load_explicit(&t->live, memory_order_relaxed) + 1);
		if (rc != 0)
			return rc;
		t = set_current(s, memory_order_relaxed);
	}
	size_t i = set_slot(t, key);
	uintptr_t k;
	while ((k = atomic_load_explicit(&t->keys[i], memory_order_relaxed)) != KEY_EMPTY &&
	       k != KEY_TOMB)
		i = (i + 1) & t->mask;
	t->recs[i] = *rec;
	atomic_store_explicit(&t->keys[i], key, memory_order_release);
	filter_count(s, key, +1);
	if (k == KEY_EMPTY)
		t->used++;
	atomic_fetch_add_explicit(&t->live, 1, memory_order_relaxed);
	return 0;
}

int set_insert(sampled_set *s, const void *p, const sample_rec *rec)
{
	rt_lock_acquire(s->mu);
	int rc = set_insert_locked(s, p, rec);
	rt_lock_release(s->mu);
	return rc;
}

/* Index of key in t, or SIZE_MAX. Writers only. */
static size_t find(const set_table *t, uintptr_t key)
{
	size_t i = set_slot(t, key);
	for (size_t n = 0; n <= t->mask; n++) {
		uintptr_t k = atomic_load_explicit(&t->keys[i], memory_order_relaxed);
		if (k == KEY_EMPTY)
			return SIZE_MAX;
		if (k == key)
			return i;
		i = (i + 1) & t->mask;
	}
	return SIZE_MAX;
}

bool set_remove_locked(sampled_set *s, const void *p, sample_rec *rec_out)
{
	uintptr_t key = (uintptr_t)p;
	if (key <= KEY_TOMB)
		return false;
	set_table *t = set_current(s, memory_order_relaxed);
	size_t i = find(t, key);
	if (i == SIZE_MAX)
		return false;
	if (rec_out)
		*rec_out = t->recs[i];
	filter_count(s, key, -1);
	size_t next = (i + 1) & t->mask;
	if (atomic_load_explicit(&t->keys[next], memory_order_relaxed) != KEY_EMPTY) {
		/* Inside a cluster: later keys' probe chains may run through i. */
		atomic_store_explicit(&t->keys[i], KEY_TOMB, memory_order_release);
	} else {
		/* The cluster ends here: no chain passes through i, nor through
		 * the tombstones right before it. Empty them all. */
		size_t j = i;
		do {
			atomic_store_explicit(&t->keys[j], KEY_EMPTY, memory_order_release);
			t->used--;
			j = (j - 1) & t->mask;
		} while (j != i && atomic_load_explicit(&t->keys[j], memory_order_relaxed) == KEY_TOMB);
	}
	size_t live = atomic_fetch_sub_explicit(&t->live, 1, memory_order_relaxed) - 1;
	/* Still mostly tombstones (a churning cluster): copy them away so
	 * misses, the free fast path, stay short. Rare by construction. */
	if (t->used >= (t->mask + 1) / 4 && live * 2 < t->used - live)
		rehash(s, live);
	return true;
}

bool set_remove(sampled_set *s, const void *p, sample_rec *rec_out)
{
	rt_lock_acquire(s->mu);
	bool found = set_remove_locked(s, p, rec_out);
	rt_lock_release(s->mu);
	return found;
}

bool set_get(sampled_set *s, const void *p, sample_rec *rec_out)
{
	uintptr_t key = (uintptr_t)p;
	if (key <= KEY_TOMB)
		return false;
	rt_lock_acquire(s->mu);
	const set_table *t = set_current(s, memory_order_relaxed);
	size_t i = find(t, key);
	if (i != SIZE_MAX)
		*rec_out = t->recs[i];
	rt_lock_release(s->mu);
	return i != SIZE_MAX;
}

size_t set_tombstones(sampled_set *s)
{
	rt_lock_acquire(s->mu);
	const set_table *t = set_current(s, memory_order_relaxed);
	size_t n = t->used - atomic_load_explicit(&t->live, memory_order_relaxed);
	rt_lock_release(s->mu);
	return n;
}

size_t set_size(const sampled_set *s)
{
	const set_table *t = set_current(s, memory_order_acquire);
	return atomic_load_explicit(&t->live, memory_order_relaxed);
}

size_t set_capacity(const sampled_set *s)
{
	const set_table *t = set_current(s, memory_order_acquire);
	return t->mask + 1;
}

size_t set_mapped_bytes(sampled_set *s)
{
	rt_lock_acquire(s->mu);
	const set_table *t = set_current(s, memory_order_acquire);
	size_t n = t == &set_empty_table ? 0 : t->map_len;
	for (size_t i = 0; i < s->nretired; i++)
		n += s->retired[i]->map_len;
	rt_lock_release(s->mu);
	return n;
}

void set_lock_all(sampled_set *s)
{
	rt_lock_acquire(s->mu);
}

void set_unlock_all(sampled_set *s)
{
	rt_lock_release(s->mu);
}
