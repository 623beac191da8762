/*
 * tlring.c: the timeline ring and the peak snapshot (tlring.h,
 * docs/TIME.md "How the series is kept" and "Peak").
 *
 * A point is made by one walk of the stack table under its lock, copying
 * each site's in-use sums (the profile's own estimates and variances),
 * then, outside the lock, summing the size classes of each (stack, rate)
 * and keeping the SERIES_SITES largest by live bytes; everything else is
 * summed into "other". The ring has SERIES_POINTS slots: when full, every
 * other point is dropped and points are taken half as often from then on,
 * so memory never grows and the series always spans the whole run.
 */
#include "tlring.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "allocprof/timeline.h"
#include "lifebins.h"

typedef struct entry {
	const stack *stk;
	uint64_t rate;
	ap_heap_sums inuse;
} entry;

typedef struct point {
	uint64_t t_ns;
	ap_heap_sums total, other;
	uint32_t nsites;
	entry sites[SERIES_SITES];
} point;

static struct {
	pthread_mutex_t lock;
	stack_table *table;
	arena *a;
	bool timeline, peak, lifetimes;
	uint64_t period;
	uint64_t cadence_ns, stride; /* a point every stride ticks */
	uint64_t ticks, next_tick;   /* monotonic deadline of the next tick */
	uint64_t mono0, off_ns;      /* t = mono - mono0 + off_ns */
	point *ring;                 /* SERIES_POINTS, allocated at the first tick */
	size_t n;
	/* peak */
	uint64_t peak_gap_ns, last_snap_ns;
	uint64_t candidates;         /* sampled events up to the snapshot */
	double max_space;            /* running maximum of the in-use total */
	double last_snap_space;      /* in-use total at the last evaluation */
	entry *peak_v;
	size_t peak_n, peak_cap;
	ap_heap_sums peak_total;
	uint64_t peak_t;
	bool have_peak;
	/* the sites' entries gathered at the last walk (grown as needed) */
	entry *buf;
	size_t buf_cap;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER };

static atomic_bool peak_req, grow_req;
static _Atomic uint64_t snap_mark_bits; /* double: next growth threshold */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void set_mark(double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	atomic_store_explicit(&snap_mark_bits, u, memory_order_relaxed);
}

static double get_mark(void)
{
	uint64_t u = atomic_load_explicit(&snap_mark_bits, memory_order_relaxed);
	double v;
	memcpy(&v, &u, sizeof v);
	return v;
}

static void restart_clock(uint64_t start_realtime_ns)
{
	uint64_t r = real_ns();
	S.mono0 = mono_ns();
	S.off_ns = r > start_realtime_ns ? r - start_realtime_ns : 0;
}

void series_configure(stack_table *t, arena *a, uint64_t period, uint64_t cadence_ns,
		      bool peak, uint64_t peak_gap_ns, uint64_t start_realtime_ns,
		      bool lifetimes)
{
	/* a fresh state (tests configure several times; memory of an earlier
	 * arena is forgotten, never freed into this one) */
	pthread_mutex_t lock = S.lock;
	memset(&S, 0, sizeof S);
	S.lock = lock;
	atomic_store(&peak_req, false);
	atomic_store(&grow_req, false);
	S.table = t;
	S.period = period;
	S.a = a;
	S.timeline = cadence_ns != 0;
	S.cadence_ns = cadence_ns;
	S.stride = 1;
	S.peak = peak;
	S.peak_gap_ns = peak_gap_ns;
	S.lifetimes = lifetimes;
	restart_clock(start_realtime_ns);
	S.next_tick = S.timeline ? S.mono0 + cadence_ns : 0;
	set_mark(0);
	if (t)
		t->life_on = lifetimes;
}

bool series_needs_thread(void)
{
	return S.timeline || S.peak;
}

bool series_watches_peak(void)
{
	return S.peak;
}

bool series_wants_wake(const table_totals *after)
{
	if (!S.peak || after->inuse_space < after->peak_inuse_space)
		return false;
	/* A new running maximum: worth a look when it grew enough since the
	 * last snapshot; the dumper's deadline catches smaller growth after
	 * peak_gap. */
	if (!atomic_exchange(&peak_req, true))
		return true;
	return after->inuse_space >= get_mark() && !atomic_exchange(&grow_req, true);
}

uint64_t series_deadline(void)
{
	if (!S.timeline && !S.peak)
		return 0;
	pthread_mutex_lock(&S.lock); /* a dump may be taking a snapshot */
	uint64_t d = S.timeline ? S.next_tick : 0;
	if (S.peak && atomic_load(&peak_req)) {
		uint64_t p = S.last_snap_ns + S.peak_gap_ns;
		if (!d || p < d)
			d = p ? p : 1;
	}
	pthread_mutex_unlock(&S.lock);
	return d;
}

/* ---- gathering --------------------------------------------------------- */

static void sums_add(ap_heap_sums *to, const ap_heap_sums *s)
{
	to->objects += s->objects;
	to->space += s->space;
	to->u += s->u;
	to->space_var += s->space_var;
	to->objects_var += s->objects_var;
	to->usable += s->usable;
	to->space_var2 += s->space_var2;
	to->objects_var2 += s->objects_var2;
	to->samples += s->samples;
	to->exact += s->exact;
}

static bool entry_less(const entry *x, const entry *y)
{
	if (x->stk != y->stk)
		return (uintptr_t)x->stk < (uintptr_t)y->stk;
	return x->rate < y->rate;
}

static void sift(entry *v, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && entry_less(&v[c], &v[c + 1]))
			c++;
		if (!entry_less(&v[i], &v[c]))
			return;
		entry t = v[i];
		v[i] = v[c];
		v[c] = t;
		i = c;
	}
}

/* Heapsort by (stack, rate): no allocation, O(n log n). */
static void sort_entries(entry *v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n);
	for (size_t k = n; k-- > 1;) {
		entry t = v[0];
		v[0] = v[k];
		v[k] = t;
		sift(v, 0, k);
	}
}

/*
 * Copy every site's in-use sums into S.buf, merge the size classes of
 * each (stack, rate) and sum the total. Returns the number of merged
 * entries, or -1 when memory ran out. Caller holds S.lock.
 */
static long gather(ap_heap_sums *total, uint64_t *events, double *max_space)
{
	stack_table *t = S.table;
	table_lock(t);
	*events = t->tot.samples + t->tot.frees;
	*max_space = t->tot.peak_inuse_space;
	size_t need = t->nsites ? t->nsites : 1;
	if (need > S.buf_cap) {
		size_t cap = need + need / 2;
		entry *nb = arena_realloc(S.a, S.buf, cap * sizeof *nb);
		if (!nb) {
			table_unlock(t);
			return -1;
		}
		S.buf = nb;
		S.buf_cap = cap;
	}
	size_t n = 0;
	for (const site *s = t->all_sites; s && n < S.buf_cap; s = s->all_next) {
		if (s->inuse.samples == 0)
			continue;
		S.buf[n].stk = s->stk;
		S.buf[n].rate = s->rate;
		S.buf[n].inuse = s->inuse;
		n++;
	}
	table_unlock(t);
	sort_entries(S.buf, n);
	memset(total, 0, sizeof *total);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		sums_add(total, &S.buf[i].inuse);
		if (m > 0 && S.buf[m - 1].stk == S.buf[i].stk &&
		    S.buf[m - 1].rate == S.buf[i].rate)
			sums_add(&S.buf[m - 1].inuse, &S.buf[i].inuse);
		else
			S.buf[m++] = S.buf[i];
	}
	return (long)m;
}

static uint64_t since_start(uint64_t now)
{
	return now - S.mono0 + S.off_ns;
}

/* ---- the ring ----------------------------------------------------------- */

static void make_point(point *pt, uint64_t now)
{
	ap_heap_sums total;
	uint64_t events;
	double mx;
	long m = gather(&total, &events, &mx);
	memset(pt, 0, sizeof *pt);
	pt->t_ns = since_start(now);
	pt->total = total;
	if (m < 0)
		return; /* no memory: a point with the total only */
	/* the SERIES_SITES largest, by insertion into a sorted short list */
	size_t k = 0;
	for (long i = 0; i < m; i++) {
		const entry *e = &S.buf[i];
		if (k == SERIES_SITES && e->inuse.space <= pt->sites[k - 1].inuse.space)
			continue;
		size_t j = k < SERIES_SITES ? k++ : k - 1;
		while (j > 0 && pt->sites[j - 1].inuse.space < e->inuse.space) {
			pt->sites[j] = pt->sites[j - 1];
			j--;
		}
		pt->sites[j] = *e;
	}
	pt->nsites = (uint32_t)k;
	pt->other = total;
	for (size_t j = 0; j < k; j++) {
		ap_heap_sums neg = pt->sites[j].inuse;
		ap_heap_sums *o = &pt->other;
		o->objects -= neg.objects;
		o->space -= neg.space;
		o->u -= neg.u;
		o->space_var -= neg.space_var;
		o->objects_var -= neg.objects_var;
		o->usable -= neg.usable;
		o->space_var2 -= neg.space_var2;
		o->objects_var2 -= neg.objects_var2;
		o->samples -= neg.samples;
		o->exact -= neg.exact;
	}
}

/* Drop every other point (keeping the first), halving the ring. */
static void thin(void)
{
	size_t k = 0;
	for (size_t i = 0; i < S.n; i += 2)
		S.ring[k++] = S.ring[i];
	S.n = k;
	S.stride *= 2;
}

static void tick(uint64_t now)
{
	if (!S.ring) {
		S.ring = arena_alloc(S.a, SERIES_POINTS * sizeof *S.ring);
		if (!S.ring) {
			S.timeline = false;
			return;
		}
	}
	uint64_t k = S.ticks++;
	if (k % S.stride != 0)
		return;
	if (S.n == SERIES_POINTS) {
		thin();
		if (k % S.stride != 0)
			return;
	}
	make_point(&S.ring[S.n++], now);
}

/* ---- peak ----------------------------------------------------------------- */

/* Compare the current in-use total with the stored peak; keep a copy of
 * every site's counters when it is higher. Caller holds S.lock. */
static void evaluate_peak(uint64_t now)
{
	ap_heap_sums total;
	uint64_t events;
	long m = gather(&total, &events, &S.max_space);
	if (m < 0)
		return;
	S.last_snap_ns = now;
	S.last_snap_space = total.space;
	if (S.have_peak && total.space <= S.peak_total.space) {
		set_mark(S.peak_total.space * (1 + SERIES_PEAK_GROWTH));
		return;
	}
	if ((size_t)m > S.peak_cap) {
		size_t cap = (size_t)m + (size_t)m / 2;
		entry *nv = arena_realloc(S.a, S.peak_v, cap * sizeof *nv);
		if (!nv)
			return;
		S.peak_v = nv;
		S.peak_cap = cap;
	}
	memcpy(S.peak_v, S.buf, (size_t)m * sizeof *S.buf);
	S.candidates = events;
	S.peak_n = (size_t)m;
	S.peak_total = total;
	S.peak_t = since_start(now);
	S.have_peak = true;
	set_mark(total.space * (1 + SERIES_PEAK_GROWTH));
}

void series_poll(uint64_t now)
{
	pthread_mutex_lock(&S.lock);
	if (S.timeline && now >= S.next_tick) {
		tick(now);
		/* one point however many ticks a stopped process missed */
		S.next_tick = now + S.cadence_ns;
	}
	if (S.peak && atomic_load(&peak_req)) {
		table_totals tot;
		table_totals_get(S.table, &tot);
		bool grown = tot.inuse_space >= get_mark();
		if (grown || now - S.last_snap_ns >= S.peak_gap_ns) {
			atomic_store(&peak_req, false);
			atomic_store(&grow_req, false);
			evaluate_peak(now);
		}
	}
	pthread_mutex_unlock(&S.lock);
}

void series_atfork_child(uint64_t start_realtime_ns)
{
	pthread_mutex_init(&S.lock, NULL);
	restart_clock(start_realtime_ns);
	S.n = 0;
	S.ticks = 0;
	S.stride = 1;
	S.next_tick = S.timeline ? S.mono0 + S.cadence_ns : 0;
	S.have_peak = false;
	S.peak_n = 0;
	S.candidates = 0;
	S.last_snap_ns = 0;
	set_mark(0);
	atomic_store(&peak_req, false);
	atomic_store(&grow_req, false);
}

/* ---- extensions ------------------------------------------------------------ */

int series_stacks_init(stacks_out *so, stack_table *t, arena *a, size_t max_stacks,
		       size_t max_addrs)
{
	memset(so, 0, sizeof *so);
	table_totals tot;
	table_totals_get(t, &tot);
	so->idcap = tot.nstacks + 1;
	so->idx = arena_alloc(a, so->idcap * sizeof *so->idx);
	so->v = arena_alloc(a, (max_stacks ? max_stacks : 1) * sizeof *so->v);
	so->addrs = arena_alloc(a, (max_addrs ? max_addrs : 1) * sizeof *so->addrs);
	return so->idx && so->v && so->addrs ? 0 : AP_ENOMEM;
}

uint32_t series_stack_ref(stacks_out *so, const stack *stk)
{
	if (stk->id < so->idcap && so->idx[stk->id])
		return so->idx[stk->id] - 1;
	ap_tl_stack *s = &so->v[so->n];
	s->addrs = so->addrs + so->naddrs;
	s->depth = stk->depth;
	for (uint32_t i = 0; i < stk->depth; i++)
		so->addrs[so->naddrs++] = (uint64_t)stk->pcs[i] - 1;
	if (stk->id < so->idcap)
		so->idx[stk->id] = (uint32_t)++so->n;
	else
		so->n++;
	return (uint32_t)(so->n - 1);
}

void series_stacks_free(stacks_out *so, arena *a)
{
	arena_free(a, so->idx);
	arena_free(a, so->v);
	arena_free(a, so->addrs);
}

/* Encode points[0..n) with cadence/candidates as a timeline blob. */
static int encode_points(arena *a, const point *pts, const entry *const *lists,
			 const size_t *counts, size_t n, uint64_t cadence,
			 uint64_t candidates, double max_space, unsigned char **data,
			 size_t *len)
{
	size_t total_sites = 0, total_addrs = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < counts[i]; j++) {
			total_sites++;
			total_addrs += lists[i][j].stk->depth;
		}
	stacks_out so;
	int rc = series_stacks_init(&so, S.table, a, total_sites, total_addrs);
	ap_tl_point *tp = arena_alloc(a, (n ? n : 1) * sizeof *tp);
	ap_tl_site *ts = arena_alloc(a, (total_sites ? total_sites : 1) * sizeof *ts);
	if (!tp || !ts)
		rc = AP_ENOMEM;
	size_t at = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		tp[i].t_ns = pts[i].t_ns;
		tp[i].total = pts[i].total;
		tp[i].other = pts[i].other;
		tp[i].sites = ts + at;
		tp[i].nsites = counts[i];
		for (size_t j = 0; j < counts[i]; j++, at++) {
			ts[at].stack = series_stack_ref(&so, lists[i][j].stk);
			ts[at].rate = lists[i][j].rate;
			ts[at].inuse = lists[i][j].inuse;
		}
	}
	if (rc == 0) {
		ap_timeline tl = { .period = S.period, .cadence_ns = cadence,
				   .candidates = candidates, .max_space = max_space,
				   .stacks = so.v,
				   .nstacks = so.n, .points = tp, .npoints = n };
		size_t cap;
		rc = ap_timeline_encode(&tl, arena_allocator(a), data, len, &cap);
	}
	arena_free(a, tp);
	arena_free(a, ts);
	series_stacks_free(&so, a);
	return rc;
}

/* The ring's points plus one for now. Caller holds S.lock. */
static int timeline_blob(arena *a, unsigned char **data, size_t *len)
{
	size_t n = S.n + 1;
	point *pts = arena_alloc(a, n * sizeof *pts);
	const entry **lists = arena_alloc(a, n * sizeof *lists);
	size_t *counts = arena_alloc(a, n * sizeof *counts);
	int rc = pts && lists && counts ? 0 : AP_ENOMEM;
	if (rc == 0) {
		if (S.n)
			memcpy(pts, S.ring, S.n * sizeof *pts);
		make_point(&pts[S.n], mono_ns());
		/* never before the ring's last point (ticks may be given times) */
		if (S.n && pts[S.n].t_ns < pts[S.n - 1].t_ns)
			pts[S.n].t_ns = pts[S.n - 1].t_ns;
		for (size_t i = 0; i < n; i++) {
			lists[i] = pts[i].sites;
			counts[i] = pts[i].nsites;
		}
		table_totals tot;
		table_totals_get(S.table, &tot);
		rc = encode_points(a, pts, lists, counts, n, S.cadence_ns * S.stride,
				   tot.samples + tot.frees, tot.peak_inuse_space, data, len);
	}
	arena_free(a, pts);
	arena_free(a, lists);
	arena_free(a, counts);
	return rc;
}

static int peak_blob(arena *a, unsigned char **data, size_t *len)
{
	evaluate_peak(mono_ns()); /* the dump's moment is a candidate too */
	if (!S.have_peak)
		return AP_ENOTFOUND;
	point pt;
	memset(&pt, 0, sizeof pt);
	pt.t_ns = S.peak_t;
	pt.total = S.peak_total;
	const entry *list = S.peak_v;
	size_t count = S.peak_n;
	return encode_points(a, &pt, &list, &count, 1, 0, S.candidates, S.max_space,
			     data, len);
}

/* Add the blob an extension writer made (rc its result; AP_ENOTFOUND:
 * nothing to write), then free it. */
static int add_blob(ap_profile *p, arena *a, const char *name, int rc,
		    unsigned char *data, size_t len)
{
	if (rc == 0) {
		rc = ap_profile_ext_add(p, name, data, len);
		arena_free(a, data);
	}
	return rc == AP_ENOTFOUND ? 0 : rc;
}

int series_add_extensions(ap_profile *p, stack_table *t, arena *a)
{
	if (!S.table || t != S.table)
		return 0; /* another table's profile (tests build their own) */
	int rc = 0, r;
	unsigned char *data = NULL;
	size_t len = 0;
	pthread_mutex_lock(&S.lock);
	if (S.timeline) {
		r = timeline_blob(a, &data, &len);
		rc = add_blob(p, a, AP_TIMELINE_EXT, r, data, len);
	}
	if (rc == 0 && S.peak) {
		r = peak_blob(a, &data, &len);
		rc = add_blob(p, a, AP_PEAK_EXT, r, data, len);
	}
	uint64_t now = since_start(mono_ns());
	pthread_mutex_unlock(&S.lock);
	if (rc == 0 && S.lifetimes) {
		r = lifebins_blob(S.table, a, now, &data, &len);
		rc = add_blob(p, a, AP_LIFETIMES_EXT, r, data, len);
	}
	return rc;
}

int series_timeline_blob(arena *a, unsigned char **data, size_t *len)
{
	*data = NULL;
	*len = 0;
	if (!S.timeline)
		return 0;
	pthread_mutex_lock(&S.lock);
	int rc = timeline_blob(a, data, len);
	pthread_mutex_unlock(&S.lock);
	return rc;
}
