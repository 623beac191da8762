/*
 * lifebins.c: per-site lifetime histograms (lifebins.h) and the
 * "lifetimes" extension (allocprof/timeline.h).
 */
#include "lifebins.h"

#include <string.h>
#include <time.h>

#include "allocprof/hist.h"
#include "allocprof/timeline.h"
#include "runtime_core.h"
#include "tlring.h"

static uint64_t bin_mid(uint32_t sigbits, uint32_t key)
{
	uint64_t lo = 0, hi = 0;
	if (ap_hist_key_bounds(sigbits, key, &lo, &hi) != 0)
		return lo;
	return lo + (hi - lo) / 2;
}

/* Merge the bins into ones twice as wide (one sigbit less). */
static void coarsen(life_bins *b)
{
	uint32_t sb = b->sigbits - 1, k = 0;
	life_bin *v = lifebins_at(b, 0);
	for (uint32_t i = 0; i < b->n; i++) {
		life_bin x = v[i];
		uint32_t key = ap_hist_value_to_key(sb, bin_mid(b->sigbits, b->keys[i]));
		if (k > 0 && b->keys[k - 1] == key) {
			life_bin *y = &v[k - 1];
			y->n += x.n;
			y->w += x.w;
			y->w2 += x.w2;
			y->bytes += x.bytes;
			y->bytes_var += x.bytes_var;
		} else {
			v[k] = x;
			b->keys[k++] = key;
		}
	}
	b->n = k;
	b->sigbits = sb;
}

void lifebins_add(arena *a, life_bins **pb, uint64_t t_ns, double w, uint64_t size)
{
	life_bins *b = *pb;
	if (!b) {
		/* one bin to start: most sites see few frees (64 bytes) */
		b = arena_alloc(a, lifebins_bins_offset(1) + sizeof(life_bin));
		if (!b)
			return;
		b->sigbits = LIFE_SIGBITS;
		b->cap = 1;
		*pb = b;
	}
	uint32_t key = ap_hist_value_to_key(b->sigbits, t_ns);
	/* The first key not below key, by binary search over the packed
	 * keys (4 bytes each, next to the header): a site whose blocks live
	 * for many different times holds up to LIFE_BINS_MAX bins, and a
	 * search over the bins themselves missed the cache at every probe. */
	uint32_t i = 0, hi = b->n;
	while (i < hi) {
		uint32_t mid = i + (hi - i) / 2;
		if (b->keys[mid] < key)
			i = mid + 1;
		else
			hi = mid;
	}
	if (i == b->n || b->keys[i] != key) {
		if (b->n == LIFE_BINS_MAX && b->sigbits > 1) {
			coarsen(b);
			lifebins_add(a, pb, t_ns, w, size);
			return;
		}
		if (b->n == b->cap) {
			uint32_t old = b->cap;
			uint32_t cap = old * 2 > LIFE_BINS_MAX ? LIFE_BINS_MAX : old * 2;
			life_bins *nb = arena_realloc(a, b, lifebins_bins_offset(cap) +
								  cap * sizeof(life_bin));
			if (!nb)
				return;
			/* the bins move up past the longer key array */
			memmove((char *)nb + lifebins_bins_offset(cap),
				(char *)nb + lifebins_bins_offset(old), nb->n * sizeof(life_bin));
			b = *pb = nb;
			b->cap = cap;
		}
		life_bin *v = lifebins_at(b, 0);
		memmove(&v[i + 1], &v[i], (b->n - i) * sizeof v[0]);
		memmove(&b->keys[i + 1], &b->keys[i], (b->n - i) * sizeof b->keys[0]);
		memset(&v[i], 0, sizeof v[i]);
		b->keys[i] = key;
		b->n++;
	}
	life_bin *x = lifebins_at(b, i);
	double z = (double)size;
	x->n++;
	x->w += w;
	x->w2 += w * w;
	x->bytes += w * z;
	x->bytes_var += (w * w - w) * z * z;
}

/* ---- the extension ---------------------------------------------------- */

typedef struct lt_ent {
	const site *s;
	const stack *stk;
	uint64_t rate;
	ap_lt_bin *freed;
	size_t nfreed;
	life_bins *live; /* built from the walk, in the scratch arena */
} lt_ent;

typedef struct lt_build {
	arena *a;
	lt_ent *v;
	size_t n, cap;
	size_t *slot; /* open addressing: site -> index + 1 */
	size_t slot_cap;
	uint64_t mono_now;
	int rc;
} lt_build;

static size_t slot_of(const lt_build *b, const site *s)
{
	uint64_t h = (uint64_t)(uintptr_t)s * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 20) & (b->slot_cap - 1);
}

/* The entry of site s, made when absent; NULL when out of memory. */
static lt_ent *ent_of(lt_build *b, const site *s)
{
	size_t j = slot_of(b, s);
	while (b->slot[j]) {
		if (b->v[b->slot[j] - 1].s == s)
			return &b->v[b->slot[j] - 1];
		j = (j + 1) & (b->slot_cap - 1);
	}
	if (b->n == b->cap || 2 * (b->n + 1) > b->slot_cap)
		return NULL; /* a site made since the count: left out */
	lt_ent *e = &b->v[b->n];
	memset(e, 0, sizeof *e);
	e->s = s;
	e->stk = s->stk;
	e->rate = s->rate;
	b->slot[j] = ++b->n;
	return e;
}

static void add_live(lt_build *b, const sample_rec *rec)
{
	if (!rec->site)
		return;
	lt_ent *e = ent_of(b, rec->site);
	if (e)
		lifebins_add(b->a, &e->live,
			     b->mono_now > rec->t_ns ? b->mono_now - rec->t_ns : 0,
			     rec->weight, rec->size);
}

/* The live sampled blocks: the region's side table, then the set. */
static void walk_live(lt_build *b)
{
	region *r = &rt_region;
	if (r->size) {
		region_lock(r);
		for (size_t i = r->prefix_pages; i < r->bump; i++)
			if (r->slots[i].state == REGION_SLOT_LIVE)
				add_live(b, &r->slots[i].rec);
		region_unlock(r);
	}
	set_lock_all(&rt_set);
	set_table *t = set_current(&rt_set, memory_order_relaxed);
	for (size_t i = 0; i <= t->mask; i++)
		if (atomic_load_explicit(&t->keys[i], memory_order_relaxed) > 1)
			add_live(b, &t->recs[i]);
	set_unlock_all(&rt_set);
}

static ap_lt_bin *to_lt_bins(arena *a, const life_bins *lb, size_t *n)
{
	*n = 0;
	if (!lb || !lb->n)
		return NULL;
	ap_lt_bin *v = arena_alloc(a, lb->n * sizeof *v);
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < lb->n; i++) {
		const life_bin *x = lifebins_at(lb, i);
		uint64_t lo = 0, hi = 0;
		(void)ap_hist_key_bounds(lb->sigbits, lb->keys[i], &lo, &hi);
		v[i].t_lo = lo;
		v[i].t_hi = hi < lo ? lo : hi;
		v[i].n = x->n;
		v[i].w = x->w;
		v[i].w2 = x->w2;
		v[i].bytes = x->bytes;
		v[i].bytes_var = x->bytes_var;
	}
	*n = lb->n;
	return v;
}

/* Copy the freed bins of every site (table lock held briefly). */
static void copy_freed(stack_table *t, lt_build *b)
{
	table_lock(t);
	table_flush_locked(t);
	for (const site *s = t->all_sites; s && b->rc == 0; s = s->all_next) {
		if (!s->life || !s->life->n)
			continue;
		lt_ent *e = ent_of(b, s);
		if (e)
			e->freed = to_lt_bins(b->a, s->life, &e->nfreed);
	}
	table_unlock(t);
}

static int encode(stack_table *t, lt_build *b, uint64_t now_ns, unsigned char **data,
		  size_t *len)
{
	size_t addrs = 0;
	for (size_t i = 0; i < b->n; i++)
		addrs += b->v[i].stk->depth;
	stacks_out so;
	int rc = series_stacks_init(&so, t, b->a, b->n, addrs);
	ap_lt_site *sites = arena_alloc(b->a, (b->n ? b->n : 1) * sizeof *sites);
	if (!sites)
		rc = AP_ENOMEM;
	for (size_t i = 0; rc == 0 && i < b->n; i++) {
		lt_ent *e = &b->v[i];
		size_t nl = 0;
		sites[i].stack = series_stack_ref(&so, e->stk);
		sites[i].rate = e->rate;
		sites[i].freed = e->freed;
		sites[i].nfreed = e->nfreed;
		sites[i].live = to_lt_bins(b->a, e->live, &nl);
		sites[i].nlive = nl;
	}
	if (rc == 0) {
		ap_lifetimes lt = { .t_ns = now_ns, .stacks = so.v, .nstacks = so.n,
				    .sites = sites, .nsites = b->n };
		size_t cap;
		rc = ap_lifetimes_encode(&lt, arena_allocator(b->a), data, len, &cap);
	}
	for (size_t i = 0; sites && i < b->n; i++)
		arena_free(b->a, (void *)sites[i].live);
	arena_free(b->a, sites);
	series_stacks_free(&so, b->a);
	return rc;
}

/* Give back every block of b: the scratch arena unmaps its chunks when
 * destroyed, but blocks above its largest class are mappings of their
 * own that only arena_free returns. */
static void free_build(lt_build *b)
{
	for (size_t i = 0; b->v && i < b->n; i++) {
		arena_free(b->a, b->v[i].freed);
		arena_free(b->a, b->v[i].live);
	}
	arena_free(b->a, b->v);
	arena_free(b->a, b->slot);
}

int lifebins_blob(stack_table *t, arena *a, uint64_t now_ns, unsigned char **data,
		  size_t *len)
{
	/* Scratch for the bins and entries: everything else is copied into
	 * the encoding, then the scratch goes away at once. */
	arena s;
	arena_init(&s);
	lt_build b;
	memset(&b, 0, sizeof b);
	b.a = &s;
	table_totals tot;
	table_totals_get(t, &tot);
	b.cap = tot.nsites + 64;
	b.slot_cap = 16;
	while (b.slot_cap < 2 * b.cap + 2)
		b.slot_cap *= 2;
	b.v = arena_alloc(&s, b.cap * sizeof *b.v);
	b.slot = arena_alloc(&s, b.slot_cap * sizeof *b.slot);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	b.mono_now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	int rc = b.v && b.slot ? 0 : AP_ENOMEM;
	if (rc == 0) {
		copy_freed(t, &b);
		walk_live(&b);
		rc = b.rc;
	}
	if (rc == 0 && b.n == 0)
		rc = AP_ENOTFOUND;
	unsigned char *tmp = NULL;
	size_t n = 0;
	if (rc == 0)
		rc = encode(t, &b, now_ns, &tmp, &n);
	if (rc == 0) {
		*data = arena_alloc(a, n ? n : 1);
		if (*data)
			memcpy(*data, tmp, n);
		else
			rc = AP_ENOMEM;
		*len = n;
	}
	arena_free(&s, tmp);
	free_build(&b);
	arena_destroy(&s);
	return rc;
}
