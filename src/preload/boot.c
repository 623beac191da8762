/*
 * boot.c: the runtime's bootstrap allocator and the allocator underneath.
 *
 * Until dlsym(RTLD_NEXT) has found the allocator underneath, rt_real points
 * at boot_* stand-ins. They start initialisation, and while it runs (the
 * initialising thread has its guard set) they serve requests from a pool:
 * dlsym may call calloc. The pool is the first BOOT_POOL_SIZE bytes of the
 * region when it could be reserved, else a static array; either way inside
 * the range free() tests. Pool blocks carry their size in a 16-byte header
 * and are never handed to the real free.
 *
 * boot_resolve_real then fills rt_real, rebuilding on the allocator's own
 * posix_memalign any entry point the allocator underneath lacks (say
 * jemalloc preloaded without pvalloc: RTLD_NEXT would find glibc's, whose
 * blocks jemalloc's free cannot take).
 */
#define AP_RUNTIME_BUILDING 1
#include "boot.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "allocprof/common.h"
#include "runtime_core.h"

/* ---- bootstrap pool --------------------------------------------------- */

#define BOOT_HDR ((size_t)16)
static _Alignas(4096) unsigned char boot_pool_static[BOOT_POOL_SIZE];
unsigned char *boot_pool = boot_pool_static; /* set before first use */

void boot_place_pool(void *base)
{
	boot_pool = base ? (unsigned char *)base : boot_pool_static;
}

uintptr_t boot_static_pool(void)
{
	return (uintptr_t)boot_pool_static;
}
static atomic_size_t boot_used;

/* Where a block of the pool or the scratch starts after `off` bytes are
 * used: room for its header (the size, for boot_size), then aligned. */
static size_t block_start(size_t off, size_t align)
{
	return (off + BOOT_HDR + align - 1) & ~(align - 1);
}

/* Write the header of the n-byte block at p; returns p. */
static void *block_stamp(unsigned char *p, size_t n)
{
	memcpy(p - BOOT_HDR, &n, sizeof n);
	return p;
}

static void *boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	if (n == 0)
		n = 1;
	if (n > BOOT_POOL_SIZE || align > BOOT_POOL_SIZE || (align & (align - 1)))
		return NULL;
	size_t off = atomic_load(&boot_used), start;
	do {
		start = block_start(off, align);
		if (start > BOOT_POOL_SIZE - n)
			return NULL;
	} while (!atomic_compare_exchange_weak(&boot_used, &off, start + n));
	/* Fresh static or mapped memory: already zero. */
	return block_stamp(boot_pool + start, n);
}

/* ---- scratch (boot.h) -------------------------------------------------- */

#define BOOT_SCRATCH_SIZE ((size_t)8192)
static unsigned char *scratch_base; /* in the pool; set once */
static size_t scratch_used;         /* owner only */
static _Atomic(const rt_thread *) scratch_owner;
static struct {
	int64_t counter;
	uint64_t mask;
} scratch_saved; /* owner only */

bool boot_scratch_begin(void)
{
	/* Attached, the runtime's entry points come and go one GOT slot at a
	 * time (attach, detach): a scratch block allocated through a patched
	 * slot could be freed through one already restored, by the allocator
	 * underneath, which does not own it. */
	if (rt_attached)
		return false;
	const rt_thread *none = NULL;
	if (!atomic_compare_exchange_strong(&scratch_owner, &none, &rt_tls))
		return false;
	if (!scratch_base)
		scratch_base = boot_alloc(BOOT_SCRATCH_SIZE, 16);
	if (!scratch_base) {
		atomic_store(&scratch_owner, NULL);
		return false;
	}
	scratch_used = 0;
	scratch_saved.mask = rt_enter();
	scratch_saved.counter = rt_tls.sampler.bytes_until_sample;
	rt_tls.sampler.bytes_until_sample = 0;
	return true;
}

void boot_scratch_end(void)
{
	rt_tls.sampler.bytes_until_sample = scratch_saved.counter;
	uint64_t m = scratch_saved.mask;
	atomic_store(&scratch_owner, NULL);
	rt_leave(m);
}

void *boot_scratch_alloc(size_t n, bool zero)
{
	if (atomic_load_explicit(&scratch_owner, memory_order_relaxed) != &rt_tls)
		return NULL; /* no window open on this thread */
	if (n == 0)
		n = 1;
	size_t start = block_start(scratch_used, 16);
	if (n > BOOT_SCRATCH_SIZE || start > BOOT_SCRATCH_SIZE - n)
		return NULL;
	scratch_used = start + n;
	void *p = block_stamp(scratch_base + start, n);
	if (zero)
		memset(p, 0, n); /* a reused scratch holds the last window's data */
	return p;
}

void boot_scratch_atfork_child(void)
{
	atomic_store(&scratch_owner, NULL);
}

size_t boot_size(const void *p)
{
	size_t n;
	memcpy(&n, (const unsigned char *)p - BOOT_HDR, sizeof n);
	return n;
}

static void *boot_malloc(size_t n);
static void boot_free(void *p);
static void *boot_calloc(size_t n, size_t m);
static void *boot_realloc(void *p, size_t n);
static int boot_posix_memalign(void **out, size_t align, size_t n);
static void *boot_aligned_alloc(size_t align, size_t n);
static void *boot_memalign(size_t align, size_t n);
static void *boot_valloc(size_t n);
static void *boot_pvalloc(size_t n);
static size_t boot_usable(void *p);

real_fns rt_real = { boot_malloc,	 boot_free,	    boot_calloc,
		     boot_realloc,	 boot_posix_memalign, boot_aligned_alloc,
		     boot_memalign,	 boot_valloc,	     boot_pvalloc,
		     boot_usable };

bool boot_real_resolved(void)
{
	return rt_real.malloc != boot_malloc;
}

/* Start initialisation unless this thread is the one running it. */
static bool boot_try_init(void)
{
	if (!rt_tls.guard)
		rt_ensure_init();
	return boot_real_resolved();
}

static void *boot_malloc(size_t n)
{
	return boot_try_init() ? rt_real.malloc(n) : boot_alloc(n, 16);
}

static void boot_free(void *p)
{
	/* Pool blocks never get here (free's filter test catches them). */
	if (boot_try_init())
		rt_real.free(p);
}

static void *boot_calloc(size_t n, size_t m)
{
	if (boot_try_init())
		return rt_real.calloc(n, m);
	size_t total;
	if (__builtin_mul_overflow(n, m, &total))
		return NULL;
	return boot_alloc(total, 16);
}

static void *boot_realloc(void *p, size_t n)
{
	if (boot_try_init())
		return rt_real.realloc(p, n);
	return p ? NULL : boot_alloc(n, 16);
}

static int boot_posix_memalign(void **out, size_t align, size_t n)
{
	if (boot_try_init())
		return rt_real.posix_memalign(out, align, n);
	void *p = boot_alloc(n, align);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

static void *boot_aligned_alloc(size_t align, size_t n)
{
	return boot_try_init() ? rt_real.aligned_alloc(align, n) : boot_alloc(n, align);
}

static void *boot_memalign(size_t align, size_t n)
{
	return boot_try_init() ? rt_real.memalign(align, n) : boot_alloc(n, align);
}

static void *boot_valloc(size_t n)
{
	return boot_try_init() ? rt_real.valloc(n) : boot_alloc(n, 4096);
}

static void *boot_pvalloc(size_t n)
{
	return boot_try_init() ? rt_real.pvalloc(n) : boot_alloc(n, 4096);
}

static size_t boot_usable(void *p)
{
	return boot_try_init() ? rt_real.malloc_usable_size(p) : 0;
}

/* ---- emulations for entry points the allocator underneath lacks -------- */

/* If, say, jemalloc is preloaded after us but does not define pvalloc,
 * RTLD_NEXT finds glibc's, whose blocks jemalloc's free cannot take. Such
 * entry points are rebuilt on the allocator's own posix_memalign. */
static size_t page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	return ps > 0 ? (size_t)ps : 4096;
}

static size_t round_align(size_t align)
{
	if (align < sizeof(void *))
		return sizeof(void *);
	size_t a = sizeof(void *);
	while (a < align && a < ((size_t)1 << 62))
		a <<= 1;
	return a;
}

static void *emu_memalign(size_t align, size_t n)
{
	void *p = NULL;
	int rc = rt_real.posix_memalign(&p, round_align(align), n);
	if (rc != 0) {
		errno = rc;
		return NULL;
	}
	return p;
}

static void *emu_aligned_alloc(size_t align, size_t n)
{
	return emu_memalign(align, n);
}

static void *emu_valloc(size_t n)
{
	return emu_memalign(page_size(), n);
}

static void *emu_pvalloc(size_t n)
{
	size_t ps = page_size();
	if (n > SIZE_MAX - ps) {
		errno = ENOMEM;
		return NULL;
	}
	return emu_memalign(ps, n ? (n + ps - 1) & ~(ps - 1) : ps);
}

size_t boot_emu_usable(void *p)
{
	(void)p;
	return 0; /* unknown: the allocator underneath cannot tell */
}

const void *boot_object_of(const void *addr)
{
	if (!addr)
		return NULL;
#ifdef AP_HAVE_DL_FIND_OBJECT
	/* The loader's sorted table of objects: a binary search. dladdr
	 * also looks for the nearest symbol, reading every dynamic symbol
	 * of the object: 18 calls at start-up took 1.6 million instructions
	 * over libc (callgrind). dlfo_map_start is dladdr's dli_fbase. */
	struct dl_find_object fo;
	if (_dl_find_object((void *)(uintptr_t)addr, &fo) == 0)
		return fo.dlfo_map_start;
	return NULL;
#else
	Dl_info di;
	return dladdr(addr, &di) ? di.dli_fbase : NULL;
#endif
}

static bool same_object(void *a, void *b)
{
	const void *oa = boot_object_of(a);
	return oa && oa == boot_object_of(b);
}

/* Is f the address of a symbol its object defines, not a canonical PLT
 * entry: an undefined symbol that still has an address, which a non-PIE
 * executable exports for each library function whose address it takes,
 * so that the function has one address in the whole program? */
static bool defined_at(void *f)
{
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1(f, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return true; /* no symbol to tell: take it as it is */
	return sym->st_shndx != SHN_UNDEF;
}

static void *next_sym(const char *name);

/* Inside the runtime: what the loader allocates for the lookup (dlsym's
 * error state, the message of a symbol not found: jemalloc's API over
 * glibc) is not the program's, and was in its profile. */
void *boot_next_sym(const char *name)
{
	uint64_t m = rt_enter();
	void *f = next_sym(name);
	rt_leave(m);
	return f;
}

static void *next_sym(const char *name)
{
	if (!rt_attached)
		return dlsym(RTLD_NEXT, name);
	void *f = dlsym(RTLD_DEFAULT, name);
	if (!f || defined_at(f))
		return f;
	/* A canonical PLT entry (python3, node): it jumps through the GOT
	 * entry the attach points at the runtime. The definition it stands
	 * for is the first in the global scope's order (the link map's, for
	 * the objects loaded at start: preloads before libc), the executable
	 * and this library left out. */
	struct link_map *l = NULL;
	void *main_h = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
	if (!main_h || dlinfo(main_h, RTLD_DI_LINKMAP, &l) != 0)
		l = NULL;
	struct link_map *self = NULL;
	Dl_info di;
	if (!dladdr1((void *)&boot_next_sym, &di, (void **)&self, RTLD_DL_LINKMAP))
		self = NULL;
	void *found = NULL;
	for (; l && !found; l = l->l_next) {
		if (!l->l_name || !l->l_name[0] || l == self)
			continue; /* the executable, the runtime */
		void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue; /* the vDSO */
		void *g = dlsym(h, name);
		struct link_map *gl = NULL;
		/* defined by this very object: dlsym also searches its
		 * dependencies */
		if (g && dladdr1(g, &di, (void **)&gl, RTLD_DL_LINKMAP) && gl == l &&
		    defined_at(g))
			found = g;
		dlclose(h);
	}
	return found;
}

#define RESOLVE(field, name)                                                \
	do {                                                                \
		void *f_ = boot_next_sym(name);                                  \
		if (f_)                                                     \
			memcpy(&r.field, &f_, sizeof f_);                   \
	} while (0)

const char *boot_home_name(void)
{
	Dl_info di;
	void *f;
	memcpy(&f, &rt_real.malloc, sizeof f);
	return dladdr(f, &di) && di.dli_fname ? di.dli_fname : "?";
}

int boot_resolve_real(void)
{
	real_fns r;
	memset(&r, 0, sizeof r);
	RESOLVE(malloc, "malloc");
	RESOLVE(free, "free");
	RESOLVE(calloc, "calloc");
	RESOLVE(realloc, "realloc");
	RESOLVE(posix_memalign, "posix_memalign");
	RESOLVE(aligned_alloc, "aligned_alloc");
	RESOLVE(memalign, "memalign");
	RESOLVE(valloc, "valloc");
	RESOLVE(pvalloc, "pvalloc");
	RESOLVE(malloc_usable_size, "malloc_usable_size");
	if (!r.malloc || !r.free || !r.calloc || !r.realloc || !r.posix_memalign)
		return AP_ENOTFOUND;
	void *home;
	memcpy(&home, &r.malloc, sizeof home);
	/* posix_memalign must be the allocator's own for the emulations.
	 * When it is not (a wrapper underneath that defines malloc but not
	 * posix_memalign, a debugging shim, say), nothing is sampled, but the
	 * program must still run: each entry point keeps its own next
	 * definition, exactly what the program gets without the runtime,
	 * instead of the bootstrap pool, which would soon run out; only one
	 * found nowhere is emulated. */
	void *pm;
	memcpy(&pm, &r.posix_memalign, sizeof pm);
	bool own_pm = same_object(pm, home);
#define SAME(field, emu)                                                    \
	do {                                                                \
		void *f_;                                                   \
		memcpy(&f_, &r.field, sizeof f_);                           \
		if (!f_ || (own_pm && !same_object(f_, home)))              \
			r.field = emu;                                      \
	} while (0)
	SAME(aligned_alloc, emu_aligned_alloc);
	SAME(memalign, emu_memalign);
	SAME(valloc, emu_valloc);
	SAME(pvalloc, emu_pvalloc);
	SAME(malloc_usable_size, boot_emu_usable);
#undef SAME
	/* Publish: malloc last, it is what boot_try_init checks. */
	rt_real.free = r.free;
	rt_real.calloc = r.calloc;
	rt_real.realloc = r.realloc;
	rt_real.posix_memalign = r.posix_memalign;
	rt_real.aligned_alloc = r.aligned_alloc;
	rt_real.memalign = r.memalign;
	rt_real.valloc = r.valloc;
	rt_real.pvalloc = r.pvalloc;
	rt_real.malloc_usable_size = r.malloc_usable_size;
	atomic_thread_fence(memory_order_release);
	rt_real.malloc = r.malloc;
	return own_pm ? 0 : AP_EUNSUPPORTED;
}
