/*
 * runtime.c: the runtime's state, initialisation and slow paths
 * (runtime_core.h), plus the public ap_runtime_* API.
 *
 * Bootstrapping (boot.c). Until the allocator underneath is found, rt_real
 * points at stand-ins serving a pool whose granules are claimed in the
 * sampled set's filter: free, realloc and malloc_usable_size recognise
 * pool blocks with the filter test they do anyway.
 *
 * Sampled blocks: by default (range=0) the real allocator serves them and
 * the sampled set (design 1) records them, counting each in its granule's
 * counter of the filter. With range=1 (design 2, region.h) a thread
 * sampling at a rate of at least RT_REGION_MIN_RATE gets its sampled
 * blocks below range_max from the region, whose side table keeps their
 * records; below that rate, for larger blocks, or when the region cannot
 * serve a block, design 1 again. free's filter test sends the pointers of
 * either to rt_classify (runtime_core.h).
 *
 * Reentrancy. Each thread's guard is set while the runtime works (sampling,
 * unwinding, dumping); an allocation made then -- by the unwinder, by libc
 * inside a dump -- skips sampling and goes straight to the real allocator.
 * rt_enter/rt_leave set it so that no handler of the program ever runs in
 * between (held back or blocked, runtime_core.h).
 *
 * Thread exit. Per-thread state is initial-exec TLS with no destructor: it
 * lives exactly as long as the thread, so frees made by other libraries'
 * thread-exit destructors, late in a thread's life, work like any other.
 */
#define AP_RUNTIME_BUILDING 1
#include "runtime_core.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocprof/runtime.h"
#include "attach.h"
#include "boot.h"
#include "control.h"
#include "detect.h"
#include "dump.h"
#include "ehtrim.h"
#include "http_runtime.h"
#include "memstat.h"
#include "procs.h"
#include "sample_table_rt.h"
#include "push.h"
#include "unwinder.h"

/* Aligned so that its state and hot flags are one cache line. */
runtime rt __attribute__((aligned(64)));
_Static_assert(offsetof(runtime, opt) <= 64, "rt.state and rt.hot share a line");
/* Nanoseconds spent unwinding, for the HTTP endpoint's /metrics; counted
 * only while the endpoint is on (two clock reads per sample). */
_Atomic uint64_t rt_unwind_ns;
__thread rt_thread rt_tls __attribute__((tls_model("initial-exec")));
set_filter rt_set_filter;
/* The set's writers take the stack table's lock (sampled_set.h): a
 * sample's record and entry, and a sampled free's, under one lock. */
sampled_set rt_set = { .keys = set_empty_table.keys,
		       .lock = RT_LOCK_INITIALIZER,
		       .mu = &rt.table.lock,
		       .filter = &rt_set_filter };
region rt_region;

/* The region's reservation: 64 GiB of address space (its side table, 64
 * bytes per page, is 1 GiB more, also MAP_NORESERVE and touched only under
 * used pages), or a quarter of it at a time down to 64 MiB when refused
 * (address-space limits, overcommit_memory=2). */
#define RT_REGION_WANT ((size_t)64 << 30)
#define RT_REGION_MIN ((size_t)64 << 20)

/* ---- options ------------------------------------------------------------ */

static void option_error(void *ctx, const char *msg)
{
	(void)ctx;
	rt_log("ALLOCPROF_OPTIONS: %s", msg);
}

/* ---- fork ---------------------------------------------------------------- */

/*
 * Seed t's sampler for thread stream idx and draw a fresh gap. seed 0:
 * from the OS (ap_prng_seed), never from shared state. A fixed seed: the
 * stream of ap_prng_seed_stream (distinct, reproducible per thread; a
 * fork child salts it with its pid so siblings doing the same work are
 * not sampled alike, docs/STATISTICS.md "fork").
 */
static void thread_seed(rt_thread *t, uint64_t idx)
{
	/* seed_gen read first (acquire): a seed_base set by a later attach
	 * before its bump is then the one read below */
	t->seed_gen = atomic_load(&rt.seed_gen);
	uint64_t base = __atomic_load_n(&rt.seed_base, __ATOMIC_RELAXED);
	if (base)
		(void)ap_prng_seed_stream(&t->sampler.prng, base,
					  rt.stream_salt ^ idx);
	else
		(void)ap_prng_seed(&t->sampler.prng, 0);
	ap_sampler_redraw(&t->sampler);
}

static void fork_prepare(void)
{
	rt_tls.forksave = rt_enter();
	unwind_atfork_prepare();
	pthread_mutex_lock(&rt.dump_lock);
	dump_retired_lock();
	table_lock(&rt.table); /* also the set's (rt_set.mu) */
	arena_lock(&rt.a);
	region_lock(&rt_region);
}

static void fork_parent(void)
{
	region_unlock(&rt_region);
	arena_unlock(&rt.a);
	table_unlock(&rt.table);
	dump_retired_unlock();
	pthread_mutex_unlock(&rt.dump_lock);
	rt_leave(rt_tls.forksave);
}

void rt_adopt_child(void)
{
	/* Re-initialise rather than unlock: the locks were taken by the
	 * parent's thread, whose id the child does not have. */
	region_reset_lock(&rt_region);
	arena_reset_lock(&rt.a);
	rt_lock_init(&rt.table.lock); /* also the set's */
	pthread_mutex_init(&rt.dump_lock, NULL);
	dump_retired_reset_lock();
	boot_scratch_atfork_child();
	unwind_atfork_child();
	ehtrim_atfork_child();
	rt.pid = (long)getpid();
	http_runtime_atfork_child(); /* never serve the parent's socket */
	if (rt.opt.fork_mode == RT_FORK_STOP) {
		/* Stop sampling; frees of sampled blocks keep working. */
		atomic_store(&rt.state, RT_OFF);
		rt_tls.sampler.bytes_until_sample = (int64_t)AP_SAMPLER_GAP_MAX;
	} else {
		rt.forked_child = true;
		/*
		 * Issue 12, fork: the child must not sample like its
		 * siblings (same PRNG state and gap: identical work sampled
		 * identically, merged variance K^2 V instead of K V), nor
		 * report the parent's allocations again (the parent's
		 * profile has them). Reseed the one thread a child has and
		 * start its alloc view empty; in-use keeps the inherited
		 * blocks, which are live in the child too.
		 */
		rt.stream_salt = (uint64_t)getpid() << 32;
		if (rt_tls.ready)
			thread_seed(&rt_tls, rt_tls.idx);
		table_reset_alloc(&rt.table);
		/* the child's profile window (and its identity's start
		 * time) begins at the fork */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		rt.start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000ULL +
				       (uint64_t)ts.tv_nsec;
		dumper_atfork_child();
	}
	control_atfork_child();
}

static void fork_child(void)
{
	rt_adopt_child();
	rt_leave(rt_tls.forksave);
}

/* ---- initialisation ---------------------------------------------------- */

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Reserve the region before anything can use the bootstrap pool, and
 * claim the pool's granules in the filter free() tests; the region claims
 * its pages as it makes them accessible. */
static void reserve_range(void)
{
	if (region_init(&rt_region, RT_REGION_WANT, RT_REGION_MIN, BOOT_POOL_SIZE) == 0) {
		boot_place_pool((void *)rt_region.base);
		set_filter_claim(&rt_set_filter, rt_region.base,
				 rt_region.base + (rt_region.prefix_pages << rt_region.page_shift));
		rt_region.claim = &rt_set_filter;
	} else {
		/* Design 1 for every sample; the range is the static pool. */
		set_filter_claim(&rt_set_filter, boot_static_pool(),
				 boot_static_pool() + BOOT_POOL_SIZE);
	}
}

static bool do_init(void)
{
	reserve_range();
	rt_options_default(&rt.opt);
	rt_options_parse(&rt.opt, rt_attached ? rt_attach_options
					      : getenv("ALLOCPROF_OPTIONS"),
			 option_error, NULL);
	if (rt_attached)
		rt.opt.dump_on = 0; /* no handlers put into a running program */
	if (!rt.opt.range && rt_region.size) {
		/* range=0: keep the pool's pages (parsing may have used them),
		 * give the rest back; design 1 serves every sample. */
		region_retire(&rt_region);
	}
	if (rt.opt.help) {
		size_t n;
		const ap_option_spec *sp = rt_option_specs(&n);
		rt_log("ALLOCPROF_OPTIONS=key=value,... keys:");
		for (size_t i = 0; i < n; i++)
			rt_log("  %-13s %s", sp[i].name, sp[i].help);
	}
	arena_init(&rt.a);
	pthread_mutex_init(&rt.dump_lock, NULL);
	int rc = boot_resolve_real();
	if (rc == AP_EUNSUPPORTED) {
		rt_log("the malloc underneath (%s) comes without a posix_memalign "
		       "of its own: profiling disabled, allocation calls pass "
		       "through unchanged", boot_home_name());
		return false;
	}
	if (rc != 0) {
		rt_log("cannot find the allocator underneath (dlsym RTLD_NEXT "
		       "malloc/free/calloc/realloc/posix_memalign): profiling "
		       "disabled");
		return false;
	}
	if (table_init(&rt.table, &rt.a) != 0) {
		rt_log("cannot map memory for the stack table: profiling disabled");
		return false;
	}
	rt_table_load(&rt.opt);
	if (unwind_prepare((unwinder_kind)rt.opt.unwinder) != 0) {
		/* libunwind is refused when its memory checks cannot be made
		 * descriptor-free (unwind_nofd.c); then libgcc, then fp. */
		static const unwinder_kind order[] = { UNWINDER_LIBUNWIND,
						       UNWINDER_LIBGCC, UNWINDER_FP };
		unwinder_kind alt = UNWINDER_FP;
		for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
			if (order[i] != (unwinder_kind)rt.opt.unwinder &&
			    unwind_prepare(order[i]) == 0) {
				alt = order[i];
				break;
			}
		rt_log("unwinder '%s' is not available: using %s",
		       unwinder_names[rt.opt.unwinder], unwinder_names[alt]);
		rt.opt.unwinder = alt;
	}
	ehtrim_init(rt.opt.unwind_trim && rt.opt.unwinder == UNWINDER_LIBUNWIND);
	uintptr_t lo, hi;
	if (unwind_object_range((const void *)&do_init, &lo, &hi) == 0)
		unwind_set_self(lo, hi);
	char cwd[RT_PATH_CAP];
	if (rt_anchor_pattern(rt_output_pattern(&rt.opt),
			      getcwd(cwd, sizeof cwd) ? cwd : NULL, rt.pattern,
			      sizeof rt.pattern) != 0) {
		rt_log("output pattern too long with the current directory: "
		       "writing relative to the directory at dump time");
		snprintf(rt.pattern, sizeof rt.pattern, "%s", rt_output_pattern(&rt.opt));
	}
	rt.seed_base = rt.opt.seed;
	(void)control_init();
	rt.pid = (long)getpid();
	rt.start_realtime_ns = realtime_ns();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	dumper_configure();
	procs_init();
	if (!rt_attached)
		detect_go_exit();
	if (rt.opt.verbose)
		rt_log("profiling pid %ld: rate=%llu unwinder=%s max_depth=%llu "
		       "output=%s sampled-block range=%zu MiB",
		       rt.pid, (unsigned long long)rt.opt.rate,
		       unwinder_names[rt.opt.unwinder],
		       (unsigned long long)rt.opt.max_depth, rt.pattern,
		       rt_region.size >> 20);
	return true;
}

void rt_ensure_init(void)
{
	int s = atomic_load_explicit(&rt.state, memory_order_acquire);
	if (s == RT_READY || s == RT_OFF)
		return;
	int expect = RT_NEW;
	if (atomic_compare_exchange_strong(&rt.state, &expect, RT_BUSY)) {
		uint64_t m = rt_enter();
		bool ok = do_init();
		rt_leave(m);
		atomic_store_explicit(&rt.state, ok ? RT_READY : RT_OFF,
				      memory_order_release);
		return;
	}
	if (rt_tls.guard)
		return; /* this thread is the initialiser, recursing */
	while (atomic_load_explicit(&rt.state, memory_order_acquire) == RT_BUSY)
		sched_yield();
}

/* ---- per-thread sampler -------------------------------------------------- */

static void thread_init(rt_thread *t)
{
	ap_sampler_config c;
	ap_sampler_config_default(&c);
	c.rate = rt.opt.rate;
	uint64_t idx = atomic_fetch_add(&rt.nthreads, 1) + 1;
	c.seed = __atomic_load_n(&rt.seed_base, __ATOMIC_RELAXED);
	t->idx = idx;
	t->seed_gen = atomic_load(&rt.seed_gen); /* also when init fails */
	if (ap_sampler_init(&t->sampler, &c) != 0)
		t->sampler.bytes_until_sample = (int64_t)AP_SAMPLER_GAP_MAX;
	else
		thread_seed(t, idx);
	t->ready = true;
	control_thread_added(t);
}

bool rt_sample_begin(size_t n, ap_sample_info *info)
{
	rt_thread *t = &rt_tls;
	if (t->guard)
		return false;
	int s = atomic_load_explicit(&rt.state, memory_order_acquire);
	if (AP_UNLIKELY(s != RT_READY)) {
		rt_ensure_init();
		if (atomic_load_explicit(&rt.state, memory_order_acquire) != RT_READY) {
			if (!t->guard) /* inactive: keep this thread off the slow path */
				t->sampler.bytes_until_sample = (int64_t)AP_SAMPLER_GAP_MAX;
			return false;
		}
	}
	bool drawn = rt.hot.table_on && t->ready;
	if (drawn) {
		/* sample_table=: most successes are thinned away, so decide
		 * before the signal mask's system calls. Only the guard is
		 * set: a handler's allocation meanwhile is not recorded. */
		t->guard++;
		rt_table_sample(&t->sampler, n, info);
		t->guard--;
		if (info->count == 0)
			return false;
	}
	/* From here to rt_sample_end no handler runs in this thread. */
	uint64_t m = rt_enter();
	if (AP_UNLIKELY(!t->ready)) {
		thread_init(t);
		if (!ap_sampler_should_sample(&t->sampler, n)) {
			rt_leave(m);
			return false;
		}
	} else if (AP_UNLIKELY(t->gen != atomic_load_explicit(&rt.hot.rate_gen,
							      memory_order_relaxed) ||
				 !control_on())) {
		/* Sampling was turned on, off or re-rated (control.h); a
		 * later attach may also have set a new seed. */
		if (t->seed_gen != atomic_load(&rt.seed_gen))
			thread_seed(t, t->idx);
		if (!control_sync(t) || !ap_sampler_should_sample(&t->sampler, n)) {
			rt_leave(m);
			return false;
		}
	}
	if (!drawn)
		rt_table_sample(&t->sampler, n, info);
	if (info->count == 0) {
		rt_leave(m);
		return false;
	}
	t->sigsave = m;
	return true;
}

static uint64_t monotonic_ns(void)
{
	return set_now_ns();
}

void rt_sample_end(void *p, const ap_sample_info *info)
{
	rt_thread *t = &rt_tls;
	int e = errno; /* the allocator's, for the program */
	if (p) {
		bool timed = rt.opt.http.enabled;
		uint64_t t0 = timed ? monotonic_ns() : 0;
		int depth;
		const uintptr_t *pcs = unwind_capture_own((unwinder_kind)rt.opt.unwinder,
							  (int)rt.opt.max_depth, &depth);
		if (timed)
			atomic_fetch_add_explicit(&rt_unwind_ns, monotonic_ns() - t0,
						  memory_order_relaxed);
		bool in_region = region_contains(&rt_region, p);
		uint64_t usable = in_region ? rt_underlying_usable(info->size)
					    : rt_real.malloc_usable_size(p);
		sample_rec rec;
		table_totals after;
		bool kept = false;
		uint64_t now = monotonic_ns();
		table_lock(&rt.table); /* and the set's: rt_set.mu */
		if (table_record_alloc_locked(&rt.table, pcs, depth, info->rate,
					      info, usable, &rec, &after) == 0) {
			rec.t_ns = now;
			if (in_region)
				kept = region_set_rec(&rt_region, p, &rec);
			else
				kept = set_insert_locked(&rt_set, p, &rec) == 0;
			/* Untrackable (its free would go unseen): out of
			 * both views, alloc and in-use alike. */
			if (!kept)
				table_record_drop_locked(&rt.table, &rec);
		}
		table_unlock(&rt.table);
		unwind_capture_release(); /* pcs is not read again */
		if (kept) {
			dumper_after_sample(&after);
			http_runtime_after_sample();
		}
		if (AP_UNLIKELY(unwind_lookups)) {
			unsigned k = unwind_lookups;
			unwind_lookups = 0;
			ehtrim_note(k);
		}
	}
	errno = e;
	rt_leave(t->sigsave);
}

static void rt_free_sampled(void *p)
{
	sample_rec rec;
	uint64_t now = monotonic_ns();
	uint64_t m = rt_enter();
	table_lock(&rt.table); /* and the set's: rt_set.mu */
	bool found = set_remove_locked(&rt_set, p, &rec);
	if (found && rec.site)
		table_record_free_locked(&rt.table, &rec, now);
	table_unlock(&rt.table);
	rt_leave(m);
	rt_real.free(p);
}

void *rt_realloc_sampled(void *p, size_t n)
{
	sample_rec rec;
	uint64_t m = rt_enter();
	bool found = set_remove(&rt_set, p, &rec);
	rt_leave(m);
	if (!found)
		return rt_real.realloc(p, n);
	/* The model: free(p) then malloc(n). The new block stays with the
	 * allocator underneath (realloc can then grow in place). */
	ap_sample_info info;
	bool sampled = n > 0 && ap_sampler_should_sample(&rt_tls.sampler, n) &&
		       rt_sample_begin(n, &info);
	void *q = rt_real.realloc(p, n);
	if (!q && n != 0) {
		/* Failed: p is still the program's, still sampled. */
		m = rt_enter();
		set_insert(&rt_set, p, &rec);
		rt_leave(m);
		if (sampled)
			rt_sample_end(NULL, &info);
		return NULL;
	}
	m = rt_enter();
	if (rec.site)
		table_record_free(&rt.table, &rec, monotonic_ns());
	rt_leave(m);
	if (sampled)
		rt_sample_end(q, &info);
	return q;
}


/* ---- the region: sampled blocks of design 2 -------------------------- */

/* Is a block of n bytes one the range may hold (below range_max)? */
static bool below_range_max(size_t n)
{
	return rt.opt.range_max == 0 || n < rt.opt.range_max;
}

/* Does the region serve a sampled block of n bytes? Not at all without
 * one (range=0, the default): then no call into region.c either. */
static bool region_serves(size_t n)
{
	return rt_region.size && rt_tls.sampler.rate >= RT_REGION_MIN_RATE &&
	       below_range_max(n);
}

void *rt_region_alloc(size_t n, size_t align, bool zero)
{
	if (!region_serves(n))
		return NULL;
	return region_alloc(&rt_region, n, align, zero, NULL);
}

void *rt_region_move(void *p, size_t n)
{
	if (!region_serves(n) || rt_real.malloc_usable_size == boot_emu_usable)
		return NULL;
	void *q = region_alloc(&rt_region, n, 0, false, NULL);
	if (!q)
		return NULL;
	size_t old = rt_real.malloc_usable_size(p);
	memcpy(q, p, old < n ? old : n);
	rt_real.free(p);
	return q;
}

/* A free or realloc of a pointer inside the range that is neither a pool
 * block nor a live region block: say so once, then ignore such calls (the
 * allocator underneath would abort; the runtime must not corrupt it). */
static void bad_range_pointer(const char *fn, const void *p)
{
	static atomic_bool said;
	if (!atomic_exchange(&said, true))
		rt_log("%s(%p): not a live block of allocprof's sampled-block "
		       "range (double free or invalid pointer); ignored",
		       fn, p);
}

/* Take p (a live region block) out: return its pages, retire its record. */
static bool region_release(void *p)
{
	sample_rec rec;
	uint64_t m = rt_enter();
	bool found = region_free(&rt_region, p, &rec);
	if (found && rec.site)
		table_record_free(&rt.table, &rec, monotonic_ns());
	rt_leave(m);
	return found;
}

enum rt_owner rt_classify(const void *p)
{
	/* p's eighth of its granule first, in its granule's word: the
	 * program's blocks near a sampled one (a few frees for each sample
	 * in the malloc-heavy benchmark) end here, on one more cache line
	 * of the filter. */
	if (!rt_maybe_key(p))
		return RT_OWNER_NONE;
	if (boot_in_pool(p) || region_contains(&rt_region, p))
		return RT_OWNER_RANGE;
	if (set_contains(&rt_set, p))
		return RT_OWNER_SET;
	return RT_OWNER_NONE;
}

/* rt_classify's cases in another order: the set first. By default (no
 * range) every block that gets past the eighth's bit is a set entry or
 * the program's, and the pool's and the range's bounds are two more
 * cache lines a sampled free need not read. (A set entry is never a
 * range block, so the order changes no answer.) */
void rt_free_slow(void *p)
{
	if (!rt_maybe_key(p)) {
		rt_real.free(p);
		return;
	}
	if (set_contains(&rt_set, p)) {
		rt_free_sampled(p);
		return;
	}
	if (boot_in_pool(p))
		return; /* never the real allocator's; not reused */
	if (region_contains(&rt_region, p)) {
		if (!region_release(p))
			bad_range_pointer("free", p);
		return;
	}
	rt_real.free(p);
}

/*
 * realloc of a range block is, in the profile, free(p) then an allocation
 * of n (sampled or not). Below range_max the block stays in the range:
 * resized in place when its run has room, else moved to a run twice its
 * size, so a buffer grown step by step is copied only as it doubles. Pool
 * blocks, blocks grown to range_max or more, and blocks the range cannot
 * hold go to a new block of the normal path.
 */
void *rt_realloc_range(void *p, size_t n)
{
	size_t old;
	sample_rec rec = {0};
	static const sample_rec none;
	bool boot = boot_in_pool(p);
	if (boot) {
		old = boot_size(p);
	} else if (!region_get(&rt_region, p, &rec, &old)) {
		bad_range_pointer("realloc", p);
		errno = EINVAL;
		return NULL;
	}
	if (n == 0 && !boot)
		region_release(p); /* as glibc: frees p, returns NULL */
	if (n == 0 || boot) {
		void *q = n ? malloc(n) : NULL;
		if (q)
			memcpy(q, p, old < n ? old : n);
		return q;
	}
	ap_sample_info info;
	bool sampled = ap_sampler_should_sample(&rt_tls.sampler, n) && rt_sample_begin(n, &info);
	/* Inside the runtime either way (sampled: since rt_sample_begin), so a
	 * signal held back meanwhile is let in by rt_leave. */
	uint64_t m = sampled ? 0 : rt_enter();
	void *q = p;
	/* Grown to range_max or more, the block leaves the range, as such a
	 * block would be allocated (rt_region_alloc); below it, room to double
	 * (but not past range_max) saves copies. */
	bool stays = below_range_max(n);
	if (!stays || !region_resize(&rt_region, p, n, NULL)) {
		size_t room = below_range_max(2 * old) ? 2 * old : (size_t)rt.opt.range_max - 1;
		q = stays ? region_alloc_run(&rt_region, n, 0, false, room, NULL) : NULL;
		if (!q)
			q = rt_real.malloc(n);
		if (q) /* p is freed below: its pages go back as they are copied */
			region_copy_out(&rt_region, q, p, old < n ? old : n);
	}
	if (q && rec.site)
		table_record_free(&rt.table, &rec, monotonic_ns());
	if (q && q != p)
		region_free(&rt_region, p, NULL);
	else if (q)
		region_set_rec(&rt_region, p, &none);
	if (sampled)
		rt_sample_end(q, &info);
	else
		rt_leave(m);
	return q; /* NULL: p untouched, still the program's */
}

size_t rt_usable_range(void *p)
{
	if (boot_in_pool(p))
		return boot_size(p);
	size_t usable = 0;
	region_get(&rt_region, p, NULL, &usable);
	return usable;
}

/* ---- lifetime ------------------------------------------------------------ */

__attribute__((constructor)) static void rt_constructor(void)
{
	if (atomic_load(&rt.state) == RT_NEW && attach_loaded_late())
		return; /* dlopen'ed (allocprof attach): ap_runtime_attach */
	rt_ensure_init();
	if (atomic_load(&rt.state) == RT_READY) {
		uint64_t m = rt_enter();
		dump_prime_paths(&rt.a);
		dumper_start_if_needed();
		http_runtime_start(&rt.opt.http, rt.opt.http_portfile, rt.opt.verbose);
		rt_leave(m);
	}
}

/*
 * The profile at exit, for exit() (the library destructor) and for _exit()
 * and _Exit() (interpose_signal.c), which run no destructor: pre-fork
 * servers' workers, multiprocessing children and SIGTERM handlers leave
 * that way. `shared_dump`: what a process sharing this one's memory (vfork,
 * CLONE_VM) does. At exit() it asks the dumper for the parent's profile
 * (procs_shared_exit); at _exit, the usual end of a vfork child whose exec
 * failed, it does nothing.
 */
/* The last profile of a program (at exit, at exec) is written: asked for,
 * sampling ever started (nothing to say otherwise), and an attached
 * runtime still attached. */
static bool last_dump_wanted(void)
{
	return rt.opt.dump_at_exit && control_ever_on() && (!rt_attached || control_on());
}

/* The thread's mask for dumper_exit_mask, from rt_enter's m: rt_enter
 * blocked nothing (m is RT_SIGS_NONE) when every handler is held back by
 * the trampoline, and then the thread's own mask tells whether this runs
 * in a handler (its signal blocked). */
static uint64_t mask_at(uint64_t m)
{
	return m != RT_SIGS_NONE ? m : rt_sigs_current();
}

static void rt_exit_dump(bool shared_dump)
{
	if (atomic_load(&rt.state) != RT_READY || atomic_load(&rt.sandboxed))
		return;
	if (rt_tls.guard) {
		/* exit from inside the runtime's own work in this thread (a
		 * synchronous signal's handler; asynchronous ones are blocked
		 * there): whatever it holds stays held, so no dump. */
		if (rt.opt.dump_at_exit)
			rt_log("exit inside the runtime's own work (from a signal "
			       "handler?): no profile at exit");
		return;
	}
	uint64_t m = rt_enter();
	if (!procs_check_pid()) {
		if (shared_dump)
			procs_shared_exit(); /* nothing here is its own */
		rt_leave(m);
		return;
	}
	/* Once per process: exit() whose atexit handler or destructor then
	 * calls _exit, or _exit in two threads at once, dumps once. rt.pid is
	 * this process's (procs_check_pid adopted a copy), never its parent's. */
	static _Atomic long exit_done_by;
	if (atomic_load(&rt.state) != RT_READY ||
	    atomic_exchange(&exit_done_by, rt.pid) == rt.pid) {
		rt_leave(m);
		return; /* adopted as a fork=stop child, or done */
	}
	http_runtime_stop();
	dumper_stop();
	dumper_exit_mask(mask_at(m));
	if (last_dump_wanted())
		dumper_dump_now(NULL);
	push_at_exit(); /* bounded: PUSH_EXIT_WAIT_MS */
	if (rt.opt.verbose)
		rt_memory_report();
	rt_leave(m);
}

static bool in_fault_handler(void);

/* exit() from a fault's handler (a crash reporter that leaves through exit
 * rather than _exit) is a crash's end too: in_fault_handler's rule. */
__attribute__((destructor)) static void rt_destructor(void)
{
	if (!in_fault_handler())
		rt_exit_dump(true);
}

/*
 * A fault's handler ending the program (a crash reporter's _exit or exit,
 * or its exec of a reporting tool) writes no profile unless dump_on= names that
 * signal: the heap or the runtime's own tables may be what is broken, and
 * a dump that hangs or faults there would keep a crashed service from
 * exiting. In such a handler the fault is blocked in the thread's mask (bit
 * s - 1; dump_on keeps signal s at bit s) and the program has a handler
 * for it. Without one, the blocked fault is a mask the program chose (a
 * daemon that blocks every signal and waits for them with sigwait or a
 * signalfd), not a handler: that _exit is an ordinary end, and dumps. So is
 * a mask that blocks every asynchronous signal, handler or not: the daemon
 * that blocks them all usually has a crash handler installed too, and
 * returns from main with that mask, where a fault's handler blocks its
 * fault and what its sa_mask names (crash handlers' is usually empty).
 */
static bool in_fault_handler(void)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
				      SIGTRAP, SIGSYS };
	uint64_t blocked = rt_sigs_current();
	if (rt_sigs_all_async(blocked))
		return false;
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
		int sig = faults[i];
		if (!(blocked >> (sig - 1) & 1) || (rt.opt.dump_on >> sig & 1))
			continue;
		struct sigaction now;
		if (procs_sigaction(sig, NULL, &now) != 0)
			return true; /* cannot tell: as in a handler */
		void (*h)(int) = now.sa_handler; /* sa_sigaction shares it */
		if (h != SIG_DFL && h != SIG_IGN)
			return true;
	}
	return false;
}

void rt_before_exit_now(void)
{
	if (!in_fault_handler())
		rt_exit_dump(false);
}

/* The process's last profile before it changes (exec, a seccomp filter):
 * written when wanted and anything was sampled since the process started
 * or forked. From a handler (a server that re-execs itself on SIGHUP), as
 * at exit: not the allocator's statistics, whose locks the interrupted
 * code may hold. m: rt_enter's. */
static void last_dump_if_sampled(uint64_t m)
{
	if (!last_dump_wanted())
		return;
	table_totals tot;
	table_totals_get(&rt.table, &tot);
	if (tot.samples > 0) {
		dumper_exit_mask(mask_at(m));
		dumper_dump_now(NULL);
		dumper_exit_mask(0);
	}
}

/* Does the environment envp keep the runtime in LD_PRELOAD? */
static bool env_keeps_runtime(char *const envp[])
{
	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) == 0)
			return strstr(*e + 11, "liballocprof_preload") != NULL;
	return false;
}

void rt_note_exec(const char *what, char *const envp[])
{
	/* Under `allocprof run`, a wrapper that clears LD_PRELOAD (env -i, a
	 * sanitising script, a build tool's sandbox) leaves the program it
	 * starts unprofiled, and the summary would show only the wrapper's
	 * profile: say so. A line from a stack buffer, safe in a vfork
	 * child, where most exec calls of a program's children come from. */
	if (atomic_load(&rt.state) == RT_READY && rt.opt.exec_note && !env_keeps_runtime(envp))
		rt_log("%s is started without liballocprof_preload.so in its "
		       "LD_PRELOAD: it is not profiled", what ? what : "a program");
}

void rt_before_exec(const char *what, char *const envp[])
{
	if (atomic_load(&rt.state) != RT_READY || rt_tls.guard || in_fault_handler() ||
	    atomic_load(&rt.sandboxed))
		return;
	rt_note_exec(what, envp);
	uint64_t m = rt_enter();
	/* Not in a process sharing this one's memory (vfork): nothing there
	 * is its own. Not when nothing was sampled since the process started
	 * or forked: a fork child that execs at once (every command a shell
	 * runs) leaves no file. The threads stay: if the exec fails, the
	 * program goes on as it was. */
	if (procs_check_pid())
		last_dump_if_sampled(m);
	rt_leave(m);
}

static bool sandbox_http_was, sandbox_was_on;
static uint64_t sandbox_rate;

bool rt_before_sandbox(void)
{
	if (atomic_load(&rt.state) != RT_READY || rt_tls.guard || atomic_load(&rt.sandboxed) ||
	    rt.opt.seccomp_keep)
		return false;
	uint64_t m = rt_enter();
	if (!procs_check_pid()) {
		rt_leave(m); /* a vfork child: nothing here is its own */
		return false;
	}
	last_dump_if_sampled(m);
	procs_stop_threads(&sandbox_http_was);
	atomic_store(&rt.sandboxed, true);
	rt_leave(m);
	sandbox_was_on = control_on();
	sandbox_rate = control_rate();
	control_stop(); /* its re-arming rounds sleep: before the filter */
	if (rt.opt.verbose)
		rt_log("the program installs a seccomp filter: its profile so far is "
		       "written, and this process is not profiled from here on");
	return true;
}

void rt_after_sandbox_failed(void)
{
	atomic_store(&rt.sandboxed, false);
	uint64_t m = rt_enter();
	procs_start_threads(sandbox_http_was);
	rt_leave(m);
	if (sandbox_was_on)
		control_start(sandbox_rate);
}

/* ---- public API ---------------------------------------------------------- */

AP_RUNTIME_API int ap_runtime_set_thread_rate(uint64_t rate)
{
	rt_ensure_init();
	if (atomic_load(&rt.state) != RT_READY)
		return AP_EUNSUPPORTED;
	rt_thread *t = &rt_tls;
	if (!t->ready) {
		uint64_t m = rt_enter();
		thread_init(t);
		rt_leave(m);
	}
	return ap_sampler_set_rate(&t->sampler, rate ? rate : rt.opt.rate);
}

AP_RUNTIME_API int ap_runtime_dump(const char *path)
{
	rt_ensure_init();
	if (atomic_load(&rt.state) != RT_READY)
		return AP_EUNSUPPORTED;
	uint64_t m = rt_enter();
	int rc = dumper_dump_now(path);
	rt_leave(m);
	return rc;
}

AP_RUNTIME_API int ap_runtime_get_totals(ap_runtime_totals *out)
{
	if (!out)
		return AP_EINVAL;
	rt_ensure_init();
	if (atomic_load(&rt.state) != RT_READY)
		return AP_EUNSUPPORTED;
	table_totals tot;
	uint64_t m = rt_enter();
	table_totals_get(&rt.table, &tot);
	rt_leave(m);
	out->alloc_bytes = tot.alloc_space;
	out->alloc_objects = tot.alloc_objects;
	out->inuse_bytes = tot.inuse_space > 0 ? tot.inuse_space : 0;
	out->inuse_objects = tot.inuse_objects > 0 ? tot.inuse_objects : 0;
	out->peak_inuse_bytes = tot.peak_inuse_space;
	out->samples = tot.samples;
	out->rate = control_rate(); /* 0 while sampling is off */
	return 0;
}
