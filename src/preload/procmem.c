/*
 * procmem.c: measuring the process's memory (procmem.h).
 *
 * Sources, in the order the record lists them:
 * - /proc/self/smaps_rollup (Linux 4.14+): Rss, Anonymous, shared pages
 *   (Shared_Clean + Shared_Dirty), Swap; shmem from /proc/self/status
 *   (RssShmem); file-backed = Rss - Anonymous - shmem. Without
 *   smaps_rollup, /proc/self/status alone (VmRSS, RssAnon, RssFile,
 *   RssShmem, VmSwap), whose counters the kernel may update lazily.
 * - the memory cgroup named in /proc/self/cgroup: v2 under /sys/fs/cgroup
 *   (or /sys/fs/cgroup/unified in hybrid mounts), else v1 under
 *   /sys/fs/cgroup/memory.
 * - the allocator that serves the runtime's rt_real.malloc: jemalloc when
 *   that object defines mallctl, gperftools when it defines
 *   MallocExtension_GetNumericProperty, glibc when it is libc's own.
 * - the runtime: region pages of live sampled blocks and of cached runs,
 *   the arena's mappings, the side table and sampled set.
 */
#include "procmem.h"

#include "boot.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime_core.h"

#define FILE_CAP 4096

/* Read at most cap - 1 bytes of path into buf, NUL-terminated; the
 * length, or -1. errno is preserved. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int e = errno;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = -1;
	if (fd >= 0) {
		size_t got = 0;
		while (got < cap - 1) {
			ssize_t r = read(fd, buf + got, cap - 1 - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		buf[got] = '\0';
		n = (ssize_t)got;
		close(fd);
	}
	errno = e;
	return n;
}

bool procmem_rss(uint64_t *bytes)
{
	char buf[256];
	ssize_t n = read_small("/proc/self/statm", buf, sizeof buf);
	uint64_t pages;
	if (n <= 0 || !procmem_nth_u64(buf, (size_t)n, 1, &pages))
		return false;
	*bytes = pages * (uint64_t)sysconf(_SC_PAGESIZE);
	return true;
}

/* dir + path + "/" + file into out. */
static bool join(char *out, size_t cap, const char *dir, const char *path,
		 const char *file)
{
	size_t a = strlen(dir), b = strlen(path), c = strlen(file);
	if (b == 1) /* the root: "/" */
		b = 0;
	if (a + b + 1 + c >= cap)
		return false;
	memcpy(out, dir, a);
	memcpy(out + a, path, b);
	out[a + b] = '/';
	memcpy(out + a + b + 1, file, c + 1);
	return true;
}

/* The first number in the file at dir/path/file; *is_max for "max". */
static bool read_number(const char *dir, const char *path, const char *file,
			uint64_t *v, bool *is_max)
{
	char name[1024], buf[64];
	if (!join(name, sizeof name, dir, path, file))
		return false;
	ssize_t n = read_small(name, buf, sizeof buf);
	if (n <= 0)
		return false;
	*is_max = n >= 3 && memcmp(buf, "max", 3) == 0;
	return *is_max || procmem_nth_u64(buf, (size_t)n, 0, v);
}

/* Where the process's v2 cgroup directory is, for memory files. */
static const char *const v2_roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };

static bool cgroup_v2(const char *path, uint64_t *usage, uint64_t *limit,
		      const char **root)
{
	for (size_t i = 0; i < sizeof v2_roots / sizeof v2_roots[0]; i++) {
		bool mx;
		if (!read_number(v2_roots[i], path, "memory.current", usage, &mx) || mx)
			continue;
		if (!read_number(v2_roots[i], path, "memory.max", limit, &mx) || mx)
			*limit = 0;
		*root = v2_roots[i];
		return true;
	}
	return false;
}

bool procmem_cgroup(uint64_t *usage, uint64_t *limit)
{
	char buf[FILE_CAP], path[512];
	ssize_t n = read_small("/proc/self/cgroup", buf, sizeof buf);
	if (n <= 0)
		return false;
	const char *root;
	if (procmem_cgroup_path(buf, (size_t)n, true, path, sizeof path) &&
	    cgroup_v2(path, usage, limit, &root))
		return true;
	bool mx;
	if (!procmem_cgroup_path(buf, (size_t)n, false, path, sizeof path) ||
	    !read_number("/sys/fs/cgroup/memory", path, "memory.usage_in_bytes",
			 usage, &mx) || mx)
		return false;
	/* v1 writes "no limit" as a huge page-rounded number. */
	if (!read_number("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes",
			 limit, &mx) || mx || *limit >= (uint64_t)1 << 62)
		*limit = 0;
	return true;
}

bool procmem_psi(uint32_t *centi)
{
	char buf[FILE_CAP], path[512], name[1024];
	ssize_t n = read_small("/proc/self/cgroup", buf, sizeof buf);
	if (n > 0 && procmem_cgroup_path(buf, (size_t)n, true, path, sizeof path)) {
		for (size_t i = 0; i < sizeof v2_roots / sizeof v2_roots[0]; i++) {
			if (!join(name, sizeof name, v2_roots[i], path, "memory.pressure"))
				continue;
			ssize_t k = read_small(name, buf, sizeof buf);
			if (k > 0 && procmem_psi_parse(buf, (size_t)k, centi))
				return true;
		}
	}
	n = read_small("/proc/pressure/memory", buf, sizeof buf);
	return n > 0 && procmem_psi_parse(buf, (size_t)n, centi);
}

/* ---- the kernel's view ------------------------------------------------- */

/*
 * smaps_rollup walks the page tables of every mapping, at a cost that grows
 * with the resident 4 KiB pages (memory in transparent huge pages costs
 * little), on every dump and every /metrics scrape. A walk is made only
 * when at least PROCMEM_WALK_SPACING times its last cost has passed since
 * it ended, so walking takes at most 1% of the time; other readings take
 * /proc/self/status alone (source=status). The last walk's end and cost
 * are inherited by fork children: a pre-fork server's children skip the
 * walk the parent found costly moments before.
 */
static _Atomic uint64_t walk_end_ns, walk_cost_ns;

bool procmem_walk_due(uint64_t now_ns, uint64_t last_end_ns, uint64_t last_cost_ns)
{
	return last_end_ns == 0 || now_ns < last_end_ns ||
	       now_ns - last_end_ns >= PROCMEM_WALK_SPACING * last_cost_ns;
}

static void read_kernel(ap_memory *m)
{
	char buf[FILE_CAP];
	uint64_t shmem = 0, v;
	ssize_t n = read_small("/proc/self/status", buf, sizeof buf);
	bool have_shmem = n > 0 && procmem_kb_field(buf, (size_t)n, "RssShmem:", &shmem);
	if (have_shmem)
		ap_memory_set(m, AP_MEM_SHMEM, shmem);
	uint64_t rss, anon;
	ssize_t r = -1;
	uint64_t t0 = set_now_ns();
	if (procmem_walk_due(t0, atomic_load(&walk_end_ns), atomic_load(&walk_cost_ns))) {
		r = read_small("/proc/self/smaps_rollup", buf + 0, sizeof buf);
		uint64_t t1 = set_now_ns();
		atomic_store(&walk_cost_ns, t1 - t0);
		atomic_store(&walk_end_ns, t1);
	}
	if (r > 0 && have_shmem && procmem_kb_field(buf, (size_t)r, "Rss:", &rss) &&
	    procmem_kb_field(buf, (size_t)r, "Anonymous:", &anon) &&
	    anon + shmem <= rss) {
		uint64_t sc = 0, sd = 0;
		ap_memory_set(m, AP_MEM_RSS, rss);
		ap_memory_set(m, AP_MEM_ANON, anon);
		ap_memory_set(m, AP_MEM_FILE, rss - anon - shmem);
		if (procmem_kb_field(buf, (size_t)r, "Shared_Clean:", &sc) &&
		    procmem_kb_field(buf, (size_t)r, "Shared_Dirty:", &sd))
			ap_memory_set(m, AP_MEM_SHARED, sc + sd);
		if (procmem_kb_field(buf, (size_t)r, "Swap:", &v))
			ap_memory_set(m, AP_MEM_SWAP, v);
		memcpy(m->source, "smaps_rollup", sizeof "smaps_rollup");
	} else if (n > 0) {
		/* status again: buf was reused for smaps_rollup */
		n = read_small("/proc/self/status", buf, sizeof buf);
		static const struct { const char *key; ap_memory_key k; } f[] = {
			{ "VmRSS:", AP_MEM_RSS }, { "RssAnon:", AP_MEM_ANON },
			{ "RssFile:", AP_MEM_FILE }, { "VmSwap:", AP_MEM_SWAP } };
		for (size_t i = 0; n > 0 && i < sizeof f / sizeof f[0]; i++)
			if (procmem_kb_field(buf, (size_t)n, f[i].key, &v))
				ap_memory_set(m, f[i].k, v);
		memcpy(m->source, "status", sizeof "status");
	}
	uint64_t usage, limit;
	if (procmem_cgroup(&usage, &limit)) {
		ap_memory_set(m, AP_MEM_CGROUP_USAGE, usage);
		if (limit)
			ap_memory_set(m, AP_MEM_CGROUP_LIMIT, limit);
	}
}

/* ---- the allocator's view ---------------------------------------------- */

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef int (*tc_prop_fn)(const char *, size_t *);

enum { ALLOC_UNRESOLVED = 0, ALLOC_UNKNOWN, ALLOC_GLIBC, ALLOC_JEMALLOC, ALLOC_TCMALLOC };
static _Atomic int alloc_kind;
static mallctl_fn je_ctl;
static tc_prop_fn tc_prop;

/* Is sym (found with RTLD_DEFAULT) defined by the object at base? */
static void *in_object(const char *name, const void *base)
{
	void *sym = dlsym(RTLD_DEFAULT, name);
	if (!sym || boot_object_of(sym) != base)
		return NULL;
	return sym;
}

static int resolve_allocator(void)
{
	int kind = atomic_load(&alloc_kind);
	if (kind != ALLOC_UNRESOLVED)
		return kind;
	void *m;
	/* Before the runtime resolved the allocator (or where it never
	 * does, as in a test that links it), rt_real holds the bootstrap
	 * pool's stand-ins: ask the loader instead. */
	if (boot_real_resolved()) {
		memcpy(&m, &rt_real.malloc, sizeof m);
	} else {
		m = dlsym(RTLD_NEXT, "malloc");
	}
	void *mi2;
	kind = ALLOC_UNKNOWN;
	const void *home = boot_object_of(m);
	if (home) {
		void *ctl = in_object("mallctl", home);
		void *tc = in_object("MallocExtension_GetNumericProperty", home);
		void *own = (void *)mallinfo2;
		memcpy(&mi2, &own, sizeof mi2);
		if (ctl) {
			memcpy(&je_ctl, &ctl, sizeof ctl);
			kind = ALLOC_JEMALLOC;
		} else if (tc) {
			memcpy(&tc_prop, &tc, sizeof tc);
			kind = ALLOC_TCMALLOC;
		} else if (boot_object_of(mi2) == home) {
			kind = ALLOC_GLIBC;
		}
	}
	atomic_store(&alloc_kind, kind);
	return kind;
}

static void je_stat(ap_memory *m, const char *name, ap_memory_key k)
{
	size_t v, sz = sizeof v;
	if (je_ctl(name, &v, &sz, NULL, 0) == 0 && sz == sizeof v)
		ap_memory_set(m, k, v);
}

static void tc_stat(ap_memory *m, const char *name, ap_memory_key k)
{
	size_t v;
	if (tc_prop(name, &v))
		ap_memory_set(m, k, v);
}

static void read_allocator(ap_memory *m)
{
	switch (resolve_allocator()) {
	case ALLOC_GLIBC: {
		/* Every arena, each under its lock. */
		struct mallinfo2 mi = mallinfo2();
		memcpy(m->allocator, "glibc", sizeof "glibc");
		ap_memory_set(m, AP_MEM_ALLOC_ALLOCATED, mi.uordblks + mi.hblkhd);
		ap_memory_set(m, AP_MEM_ALLOC_MAPPED, mi.arena + mi.hblkhd);
		ap_memory_set(m, AP_MEM_ALLOC_FREE, mi.fordblks);
		break;
	}
	case ALLOC_JEMALLOC: {
		/* The stats are cached: advancing the epoch refreshes them. */
		uint64_t epoch = 1;
		size_t sz = sizeof epoch;
		memcpy(m->allocator, "jemalloc", sizeof "jemalloc");
		if (je_ctl("epoch", &epoch, &sz, &epoch, sz) != 0)
			break;
		je_stat(m, "stats.allocated", AP_MEM_ALLOC_ALLOCATED);
		je_stat(m, "stats.active", AP_MEM_ALLOC_ACTIVE);
		je_stat(m, "stats.mapped", AP_MEM_ALLOC_MAPPED);
		je_stat(m, "stats.resident", AP_MEM_ALLOC_RESIDENT);
		je_stat(m, "stats.retained", AP_MEM_ALLOC_RETAINED);
		je_stat(m, "stats.metadata", AP_MEM_ALLOC_METADATA);
		break;
	}
	case ALLOC_TCMALLOC: {
		memcpy(m->allocator, "tcmalloc", sizeof "tcmalloc");
		tc_stat(m, "generic.current_allocated_bytes", AP_MEM_ALLOC_ALLOCATED);
		tc_stat(m, "generic.heap_size", AP_MEM_ALLOC_MAPPED);
		tc_stat(m, "generic.total_physical_bytes", AP_MEM_ALLOC_RESIDENT);
		tc_stat(m, "tcmalloc.pageheap_unmapped_bytes", AP_MEM_ALLOC_RETAINED);
		tc_stat(m, "tcmalloc.pageheap_free_bytes", AP_MEM_ALLOC_FREE);
		/* gperftools has no metadata property, but its physical total
		 * is the page heap's system bytes (heap_size) less the
		 * unmapped ones plus its metadata: the difference is the
		 * metadata (thread caches, span records), which grows in
		 * steps of MiB that fragmentation must not be blamed for. */
		uint64_t phys, heap, unmapped;
		if (ap_memory_get(m, AP_MEM_ALLOC_RESIDENT, &phys) &&
		    ap_memory_get(m, AP_MEM_ALLOC_MAPPED, &heap) &&
		    ap_memory_get(m, AP_MEM_ALLOC_RETAINED, &unmapped) &&
		    heap >= unmapped && phys >= heap - unmapped)
			ap_memory_set(m, AP_MEM_ALLOC_METADATA,
				      phys - (heap - unmapped));
		break;
	}
	default:
		break;
	}
}

/* ---- the runtime's own ------------------------------------------------- */

static void read_runtime(ap_memory *m)
{
	uint64_t other = set_mapped_bytes(&rt_set);
	/* With range=0 (the default) or no reservation the range holds no
	 * sampled block and caches no run: a known 0, not unknown. */
	uint64_t range = 0, cached = 0;
	if (rt_region.size) {
		region_lock(&rt_region);
		range = (uint64_t)rt_region.committed * rt_region.page;
		cached = (uint64_t)rt_region.cached * rt_region.page;
		other += rt_region.slots_rw;
		region_unlock(&rt_region);
	}
	ap_memory_set(m, AP_MEM_RUNTIME_RANGE, range);
	ap_memory_set(m, AP_MEM_RUNTIME_CACHED, cached);
	ap_memory_set(m, AP_MEM_RUNTIME_OTHER, other);
	arena_lock(&rt.a);
	ap_memory_set(m, AP_MEM_RUNTIME_ARENA, rt.a.mapped);
	arena_unlock(&rt.a);
}

void procmem_read(ap_memory *m, bool with_allocator)
{
	memset(m, 0, sizeof *m);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ap_memory_set(m, AP_MEM_TIME_NS,
		      (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
	/* The allocator first: its figures move with the program's, and the
	 * kernel's reading should not predate them. */
	if (with_allocator)
		read_allocator(m);
	read_runtime(m);
	read_kernel(m);
}
