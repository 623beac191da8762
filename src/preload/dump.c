/*
 * dump.c: build and write heap profiles from the stack table (dump.h).
 *
 * Runs in the dumper thread, in the thread calling ap_runtime_dump, or in
 * the exiting thread -- never in a signal handler or inside malloc -- with
 * that thread's reentrancy guard set, so the little libc may allocate here
 * (realpath, strerror) goes to the real allocator unsampled. The profile,
 * the encoder's buffers and zlib's state all come from the arena.
 */
#include "dump.h"

#include "allocprof/fileio.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../lib/fileio_internal.h"
#include "../lib/hash.h"
#include "allocprof/codec.h"
#include "allocprof/estimate.h"
#include "allocprof/heapv2.h"
#include "allocprof/memory.h"
#include "config.h"
#include "log.h"
#include "outdir.h"
#include "procs.h"
#include "tlring.h"
#include "unwinder.h"

/* ---- mappings -------------------------------------------------------------- */

typedef dump_mapping map_ent;

typedef struct map_list {
	arena *a;
	map_ent *v;
	size_t n, cap;
	bool failed;
	const char *only; /* non-NULL: just the object of this name ... */
	uintptr_t only_addr; /* ... loaded at this base */
} map_list;

/* A new entry at the end of l, or NULL (l->failed set). */
static map_ent *map_push(map_list *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		map_ent *nv = arena_realloc(l->a, l->v, cap * sizeof *nv);
		if (!nv) {
			l->failed = true;
			return NULL;
		}
		l->v = nv;
		l->cap = cap;
	}
	return &l->v[l->n++];
}

static void hex(const unsigned char *b, size_t n, char *out, size_t cap)
{
	static const char digits[] = "0123456789abcdef";
	size_t j = 0;
	for (size_t i = 0; i < n && j + 2 < cap; i++) {
		out[j++] = digits[b[i] >> 4];
		out[j++] = digits[b[i] & 15];
	}
	out[j] = '\0';
}

/* The GNU build ID from the object's PT_NOTE segments, as hex ("" if none). */
static void find_build_id(const struct dl_phdr_info *info, char *out, size_t cap)
{
	out[0] = '\0';
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		size_t left = ph->p_memsz;
		while (left >= sizeof(ElfW(Nhdr))) {
			ElfW(Nhdr) nh;
			memcpy(&nh, p, sizeof nh);
			size_t name_sz = (nh.n_namesz + 3) & ~(size_t)3;
			size_t desc_sz = (nh.n_descsz + 3) & ~(size_t)3;
			size_t need = sizeof nh + name_sz + desc_sz;
			if (need > left || name_sz < nh.n_namesz || desc_sz < nh.n_descsz)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp(p + sizeof nh, "GNU", 4) == 0 && nh.n_descsz <= 64) {
				hex(p + sizeof nh + name_sz, nh.n_descsz, out, cap);
				return;
			}
			p += need;
			left -= need;
		}
	}
}

/* The main program's file, read once (dump_prime_paths): /proc/self/exe
 * is gone in a program that chroot()ed (outdir.h), and then its frames
 * would have no file to be symbolised with. Written by the first caller
 * only (exe_claim), published by exe_known. */
static char exe_path[PATH_MAX];
static atomic_flag exe_claim = ATOMIC_FLAG_INIT;
static atomic_bool exe_known;

static void remember_exe(void)
{
	if (atomic_load(&exe_known) || atomic_flag_test_and_set(&exe_claim))
		return;
	ssize_t k = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
	if (k > 0) {
		exe_path[k] = '\0';
		atomic_store(&exe_known, true);
	}
}

static int map_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	map_list *l = data;
	char path[PATH_MAX];
	bool resolve = false;
	if (l->only && (info->dlpi_addr != l->only_addr || !info->dlpi_name ||
			strcmp(info->dlpi_name, l->only) != 0))
		return 0;
	if (!l->only && l->n == 0 && (!info->dlpi_name || !info->dlpi_name[0])) {
		/* The main program comes first, with an empty name. */
		if (atomic_load(&exe_known)) {
			memcpy(path, exe_path, strlen(exe_path) + 1);
		} else {
			ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
			if (k <= 0)
				return 0;
			path[k] = '\0';
		}
	} else {
		/* Objects without a file (the vDSO) cannot be symbolized. */
		if (!info->dlpi_name || info->dlpi_name[0] != '/')
			return 0;
		/* The name as loaded; collect_mappings resolves it, outside
		 * the loader's lock. */
		size_t k = strlen(info->dlpi_name);
		if (k >= sizeof path)
			return 0;
		memcpy(path, info->dlpi_name, k + 1);
		resolve = true;
	}
	char build_id[sizeof l->v[0].build_id];
	find_build_id(info, build_id, sizeof build_id);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		map_ent *m = map_push(l);
		if (!m)
			return 1;
		m->start = info->dlpi_addr + ph->p_vaddr;
		m->limit = m->start + ph->p_memsz;
		m->offset = ph->p_offset;
		memcpy(m->path, path, strlen(path) + 1);
		memcpy(m->build_id, build_id, sizeof build_id);
		m->resolve = resolve;
	}
	return 0;
}

/*
 * Mappings of objects the program has dlclose'd (dump_retire_object), so
 * samples taken in them keep a file and build ID to be symbolised with.
 * Entries are kept for the process's life, at most RETIRED_MAX of them.
 */
#define RETIRED_MAX 4096
static map_list retired;
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * realpath of the loaded objects' names, remembered for the process's life
 * and inherited by its fork children. realpath costs a readlink per path
 * component, about 40 system calls for a program's few libraries, in every
 * dump; and each child of a pre-fork server dumps once at exit, listing
 * the parent's objects again. The name an object was loaded under resolves
 * as it did at the first dump (a later package upgrade may point the
 * name's links at a newer file; the first resolution is closer to the file
 * mapped). Full, a name is resolved each time. Under retired_lock, which
 * the fork handlers hold and reset (realpath itself runs outside it).
 */
#define REAL_MAX 128
#define REAL_POOL (32 * 1024)
static struct {
	uint32_t name, real; /* offsets into real_pool */
} real_ent[REAL_MAX];
static char real_pool[REAL_POOL];
static size_t real_n, real_used;

/* The cached realpath of name into out (which may be name); false when
 * not cached. Under retired_lock. */
static bool real_lookup(const char *name, char *out)
{
	for (size_t i = 0; i < real_n; i++)
		if (strcmp(real_pool + real_ent[i].name, name) == 0) {
			const char *r = real_pool + real_ent[i].real;
			memmove(out, r, strlen(r) + 1);
			return true;
		}
	return false;
}

/* m->path (a name as loaded) replaced by its realpath, if it has one. The
 * lock is not held across realpath's system calls: a fork waits on it. */
static void resolve_path(map_ent *m)
{
	m->resolve = false;
	pthread_mutex_lock(&retired_lock);
	bool hit = real_lookup(m->path, m->path);
	pthread_mutex_unlock(&retired_lock);
	char real[PATH_MAX];
	if (hit || !realpath(m->path, real))
		return; /* gone, or unreadable: keep the name, do not remember */
	size_t nn = strlen(m->path) + 1, rn = strlen(real) + 1;
	pthread_mutex_lock(&retired_lock);
	char seen[PATH_MAX];
	if (!real_lookup(m->path, seen) && real_n < REAL_MAX &&
	    real_used + nn + rn <= REAL_POOL) {
		real_ent[real_n].name = (uint32_t)real_used;
		memcpy(real_pool + real_used, m->path, nn);
		real_ent[real_n].real = (uint32_t)(real_used + nn);
		memcpy(real_pool + real_used + nn, real, rn);
		real_used += nn + rn;
		real_n++;
	}
	pthread_mutex_unlock(&retired_lock);
	memcpy(m->path, real, rn);
}

/* Resolve the names map_cb left as loaded. */
static void resolve_paths(map_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].resolve)
			resolve_path(&l->v[i]);
}

void dump_retire_object(arena *a, void *handle)
{
	struct link_map *lm = NULL;
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name ||
	    lm->l_name[0] != '/')
		return;
	map_list one;
	memset(&one, 0, sizeof one);
	one.a = a;
	one.only = lm->l_name;
	one.only_addr = lm->l_addr;
	dl_iterate_phdr(map_cb, &one);
	resolve_paths(&one);
	pthread_mutex_lock(&retired_lock);
	retired.a = a;
	for (size_t i = 0; i < one.n && retired.n < RETIRED_MAX; i++) {
		bool known = false;
		for (size_t j = 0; j < retired.n && !known; j++)
			known = retired.v[j].start == one.v[i].start &&
				strcmp(retired.v[j].path, one.v[i].path) == 0;
		map_ent *m = known ? NULL : map_push(&retired);
		if (m)
			*m = one.v[i];
	}
	retired.failed = false;
	pthread_mutex_unlock(&retired_lock);
	arena_free(a, one.v);
}

void dump_retired_lock(void)
{
	pthread_mutex_lock(&retired_lock);
}

void dump_retired_unlock(void)
{
	pthread_mutex_unlock(&retired_lock);
}

void dump_retired_reset_lock(void)
{
	pthread_mutex_init(&retired_lock, NULL);
}

void dump_prime_paths(arena *a)
{
	remember_exe();
	dump_mapping *v = NULL;
	size_t n;
	if (dump_list_mappings(a, &v, &n) == 0)
		arena_free(a, v);
}

/* Append the retired mappings no loaded object overlaps now (an address
 * range reused by a later object belongs to that object). */
static void add_retired(map_list *l)
{
	pthread_mutex_lock(&retired_lock);
	size_t live = l->n;
	for (size_t i = 0; i < retired.n && !l->failed; i++) {
		const map_ent *r = &retired.v[i];
		bool overlaps = false;
		for (size_t j = 0; j < live && !overlaps; j++)
			overlaps = r->start < l->v[j].limit && l->v[j].start < r->limit;
		map_ent *m = overlaps ? NULL : map_push(l);
		if (m)
			*m = *r;
	}
	pthread_mutex_unlock(&retired_lock);
}

/* Every mapping into l: loaded objects, then retired ones. */
static int collect_mappings(arena *a, map_list *l)
{
	l->a = a;
	dl_iterate_phdr(map_cb, l);
	if (!l->failed) {
		resolve_paths(l);
		add_retired(l);
	}
	return l->failed ? AP_ENOMEM : 0;
}

int dump_list_mappings(arena *a, dump_mapping **v, size_t *n)
{
	map_list l;
	memset(&l, 0, sizeof l);
	int rc = collect_mappings(a, &l);
	if (rc != 0) {
		arena_free(a, l.v);
		return rc;
	}
	*v = l.v;
	*n = l.n;
	return 0;
}

static int add_mappings(ap_profile *p, arena *a, map_list *l)
{
	int rc = collect_mappings(a, l);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < l->n; i++) {
		ap_mapping m;
		memset(&m, 0, sizeof m);
		m.memory_start = l->v[i].start;
		m.memory_limit = l->v[i].limit;
		m.file_offset = l->v[i].offset;
		m.filename = ap_profile_intern(p, l->v[i].path);
		m.build_id = ap_profile_intern(p, l->v[i].build_id);
		if (m.filename < 0 || m.build_id < 0)
			return AP_ENOMEM;
		uint64_t id;
		rc = ap_profile_add_mapping(p, &m, &id);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Mapping id (1-based, in l's order) containing addr, or 0. */
static uint64_t mapping_of(const map_list *l, uint64_t addr)
{
	for (size_t i = 0; i < l->n; i++)
		if (addr >= l->v[i].start && addr < l->v[i].limit)
			return i + 1;
	return 0;
}

/* ---- locations: one per distinct address ------------------------------- */

typedef struct loc_map {
	uint64_t *addr, *id;
	size_t cap, n;
} loc_map;

static int loc_id(ap_profile *p, arena *a, loc_map *m, const map_list *maps,
		  uint64_t addr, uint64_t *out)
{
	if (m->n * 2 >= m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		uint64_t *na = arena_alloc(a, cap * sizeof *na);
		uint64_t *ni = arena_alloc(a, cap * sizeof *ni);
		if (!na || !ni) {
			arena_free(a, na);
			arena_free(a, ni);
			return AP_ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->id[i])
				continue;
			size_t j = (size_t)hash_mix64(m->addr[i]) & (cap - 1);
			while (ni[j])
				j = (j + 1) & (cap - 1);
			na[j] = m->addr[i];
			ni[j] = m->id[i];
		}
		arena_free(a, m->addr);
		arena_free(a, m->id);
		m->addr = na;
		m->id = ni;
		m->cap = cap;
	}
	size_t j = (size_t)hash_mix64(addr) & (m->cap - 1);
	while (m->id[j]) {
		if (m->addr[j] == addr) {
			*out = m->id[j];
			return 0;
		}
		j = (j + 1) & (m->cap - 1);
	}
	ap_location loc;
	memset(&loc, 0, sizeof loc);
	loc.address = addr;
	loc.mapping_id = maps ? mapping_of(maps, addr) : 0;
	uint64_t id;
	int rc = ap_profile_add_location(p, &loc, &id);
	if (rc != 0)
		return rc;
	m->addr[j] = addr;
	m->id[j] = id;
	m->n++;
	*out = id;
	return 0;
}

/* ---- samples --------------------------------------------------------------- */

/* Identity of a site's line for the rounding coin. */
static uint64_t line_key(const site_snap *s)
{
	_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t),
		       "return addresses hash as 64-bit ids");
	uint64_t h = ap_round_key((const uint64_t *)s->stk->pcs, s->stk->depth,
				  0);
	uint64_t sr[2] = {s->size, s->rate};
	return h ^ ap_round_key(sr, 2, 1);
}

static int add_samples(ap_profile *p, const dump_input *in, const map_list *maps)
{
	site_snap *sites;
	size_t n;
	int rc = table_snapshot(in->table, in->a, &sites, &n, NULL);
	if (rc != 0)
		return rc;
	loc_map lm;
	memset(&lm, 0, sizeof lm);
	uint64_t *locs = arena_alloc(in->a, UNWIND_DEPTH_MAX * sizeof *locs);
	int64_t bytes_key = ap_profile_intern(p, "bytes");
	int64_t rate_key = ap_profile_intern(p, "rate");
	if (!locs || bytes_key < 0 || rate_key < 0)
		rc = AP_ENOMEM;
	/* Oldest site first: the table lists them newest first. */
	for (size_t k = n; rc == 0 && k-- > 0;) {
		const site_snap *s = &sites[k];
		/* a fork child's inherited sites have only in-use samples */
		if (s->alloc.samples == 0 && s->inuse.samples == 0)
			continue;
		size_t depth = s->stk->depth < UNWIND_DEPTH_MAX ? s->stk->depth
								   : UNWIND_DEPTH_MAX;
		for (size_t i = 0; i < depth && rc == 0; i++)
			rc = loc_id(p, in->a, &lm, maps, (uint64_t)s->stk->pcs[i] - 1,
				    &locs[i]);
		if (rc != 0)
			break;
		int64_t vals[AP_HEAP_NVALUES];
		ap_heap_sums_encode(&s->alloc, &s->inuse, (double)s->rate,
				    line_key(s), vals);
		ap_label labels[2];
		size_t nl = 1;
		memset(labels, 0, sizeof labels);
		labels[0].key = bytes_key;
		labels[0].num = (int64_t)s->size;
		labels[0].num_unit = bytes_key;
		if (s->rate != in->period) {
			labels[1].key = rate_key;
			labels[1].num = (int64_t)s->rate;
			labels[1].num_unit = bytes_key;
			nl = 2;
		}
		rc = ap_profile_add_sample(p, locs, depth, vals, labels, nl);
	}
	arena_free(in->a, locs);
	arena_free(in->a, lm.addr);
	arena_free(in->a, lm.id);
	arena_free(in->a, sites);
	return rc;
}

/* h as the extension "hist.NAME" (ap_profile_hist_add), out of pprof's
 * header. */
static int add_hist(ap_profile *p, arena *a, const char *name, const ap_hist *h)
{
	ap_hist_snap *snap = NULL;
	int rc = ap_hist_snapshot(h, arena_allocator(a), &snap);
	if (rc == 0)
		rc = ap_profile_hist_add(p, name, snap);
	ap_hist_snap_destroy(snap);
	return rc;
}

/* A comment "KEY=VALUE" (allocprof.warning=, allocprof.attach=). */
static int add_keyed_comment(ap_profile *p, arena *a, const char *key,
			     const char *value)
{
	size_t n = strlen(key) + strlen(value) + 2;
	char *text = arena_alloc(a, n);
	if (!text)
		return AP_ENOMEM;
	snprintf(text, n, "%s=%s", key, value);
	int rc = ap_profile_add_comment(p, text);
	arena_free(a, text);
	return rc;
}

/* The process's memory and the trigger as extensions (memory.h). */
static int add_memory_ext(ap_profile *p, const dump_input *in)
{
	char text[2048];
	size_t len = 0;
	int rc = 0;
	if (in->memory && ap_memory_encode(in->memory, text, sizeof text, &len) == 0)
		rc = ap_profile_ext_add(p, AP_EXT_MEMORY, text, len);
	if (rc == 0 && in->trigger)
		rc = ap_profile_ext_add(p, AP_EXT_TRIGGER, in->trigger,
					strlen(in->trigger));
	return rc;
}

static uint64_t realtime_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Who is dumping (allocprof/profile.h, ap_process_id): pid, the profile's
 * start, the kernel's boot id and this process's dump number, so that
 * tools keep only the latest of several cumulative dumps of one process.
 * The counter is the process's (a fork child continues its parent's
 * count, but has its own pid).
 */
static _Atomic uint64_t dump_count;

static void boot_id(char *buf, size_t n)
{
	buf[0] = 0;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	size_t len = r > 0 ? (size_t)r : 0;
	buf[len] = 0;
	buf[strcspn(buf, "\n;=")] = 0;
}

static int add_process(ap_profile *p, const dump_input *in)
{
	ap_process_id id;
	memset(&id, 0, sizeof id);
	id.pid = (int64_t)getpid();
	id.start_ns = in->start_realtime_ns;
	boot_id(id.boot_id, sizeof id.boot_id);
	id.seq = atomic_fetch_add(&dump_count, 1) + 1;
	return ap_profile_set_process(p, &id);
}

int dump_build_profile(const dump_input *in, ap_profile **out)
{
	ap_profile *p = NULL;
	int rc = ap_profile_create(arena_allocator(in->a), &p);
	if (rc != 0)
		return rc;
	map_list maps;
	memset(&maps, 0, sizeof maps);
	rc = ap_profile_init_heap(p, (int64_t)in->period);
	if (rc == 0) /* pprof: bytes on the caller of malloc/operator new */
		rc = ap_profile_drop_alloc_frames(p);
	uint64_t now = realtime_now();
	p->time_nanos = (int64_t)now;
	p->duration_nanos = now > in->start_realtime_ns
				    ? (int64_t)(now - in->start_realtime_ns) : 0;
	/* timeline, peak, lifetimes (docs/TIME.md): first, so the ages of the
	 * live blocks are taken as close as possible to the dump's start */
	if (rc == 0)
		rc = series_add_extensions(p, in->table, in->a);
	if (rc == 0 && in->with_mappings)
		rc = add_mappings(p, in->a, &maps);
	if (rc == 0)
		rc = add_samples(p, in, in->with_mappings ? &maps : NULL);
	if (rc == 0)
		rc = add_process(p, in);
	if (rc == 0) {
		table_flush(in->table);
		rc = add_hist(p, in->a, "alloc_size", in->table->hist_size);
	}
	if (rc == 0)
		rc = add_hist(p, in->a, "lifetime_ns", in->table->hist_lifetime);
	if (rc == 0 && in->warning)
		rc = add_keyed_comment(p, in->a, "allocprof.warning", in->warning);
	if (rc == 0)
		rc = add_memory_ext(p, in);
	if (rc == 0 && in->attach)
		rc = add_keyed_comment(p, in->a, "allocprof.attach", in->attach);
	arena_free(in->a, maps.v);
	if (rc != 0) {
		ap_profile_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* ---- writing files --------------------------------------------------------- */

/* Record when fd's file was written, on the fine clock, for procs.c's
 * question "written before or after I started?" where the file's coarse
 * stamp cannot say (PROCS_WRITTEN_XATTR). Best effort: without user xattrs
 * that question gets its safe answer. errno is kept. */
static void stamp_written(int fd)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	char when[32];
	int wn = snprintf(when, sizeof when, "%lld",
			  (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
	int keep = errno;
	if (fsetxattr(fd, PROCS_WRITTEN_XATTR, when, (size_t)wn, 0) != 0)
		errno = keep;
}

/*
 * Write through an unnamed temporary file (O_TMPFILE) in path's directory:
 * a process killed while writing leaves no file behind, since the inode has
 * no name until it is complete. It is then linked as path itself when path
 * does not exist yet (no window at all), else under a temporary name and
 * renamed over path (a kill between those two calls, microseconds apart,
 * is the only way to leave a "NAME.tmp.PID.N"). 1 when the file system has
 * no O_TMPFILE (the caller falls back), 0 done, -1 failed (errno set).
 */
static int write_unnamed(const char *path, const void *buf, size_t len)
{
	static _Atomic unsigned long seq;
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t dn = slash ? (size_t)(slash - path) : 1;
	if (slash && dn == 0)
		dn = 1; /* "/name": the root */
	if (dn >= sizeof dir)
		return 1;
	memcpy(dir, slash ? path : ".", dn);
	dir[dn] = '\0';
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EISDIR || errno == EOPNOTSUPP || errno == EINVAL ? 1 : -1;
	char proc[64], tmp[PATH_MAX];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	int rc = -1;
	if (ap_file_write_all(fd, buf, len) == 0 && fsync(fd) == 0) {
		stamp_written(fd);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) {
			rc = 0;
		} else if (errno == EEXIST) {
			int k = snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lu", path,
					 (long)getpid(), atomic_fetch_add(&seq, 1));
			if (k > 0 && (size_t)k < sizeof tmp &&
			    linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
				rc = rename(tmp, path);
				if (rc != 0) {
					int e = errno;
					unlink(tmp);
					errno = e;
				}
			} else if (k <= 0 || (size_t)k >= sizeof tmp) {
				errno = ENAMETOOLONG;
			}
		} else if (errno == ENOENT) {
			/* No /proc: link through the name instead. */
			int e = errno;
			close(fd);
			errno = e;
			return 1;
		}
	}
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int dump_write_named(const char *what, const char *path, const void *buf, size_t len)
{
	struct stat st;
	int rc = 1;
	const char *name;
	int dfd = outdir_at(path, &name);
	if (dfd >= 0) /* a chroot()ed program's: through its directory */
		rc = apx_file_write_atomic_at(dfd, name, buf, len, 0600, stamp_written) == 0 ? 0 : -1;
	else if (!(stat(path, &st) == 0 && !S_ISREG(st.st_mode)))
		rc = write_unnamed(path, buf, len);
	if (rc == 1)
		rc = ap_file_write_atomic(path, buf, len, 0600) == 0 ? 0 : -1;
	if (rc == 0)
		return 0;
	int e = errno;
	if (what)
		rt_log("cannot write %s %s: %s", what, path, strerror(e));
	errno = e;
	return AP_EIO;
}

/*
 * Profile write failures, rate-limited: a full disk under interval=1s
 * would otherwise print a line a second. The first failure is printed;
 * later ones are counted and summarised at failure 10, 100, 1000, ...
 * and when writing works again.
 */
static _Atomic uint64_t failures;

static bool power_of_ten(uint64_t n)
{
	while (n >= 10 && n % 10 == 0)
		n /= 10;
	return n == 1;
}

/*
 * The user the process started as. A server's workers often drop
 * privileges after fork (nginx and Apache switch to www-data): a directory
 * the starting user could write may then refuse them, and the message says
 * so, since "Permission denied" alone points at the wrong culprit. Read in
 * a constructor (the preload, or an attach's dlopen), before main runs.
 */
static uid_t start_uid = (uid_t)-1;
static gid_t start_gid = (gid_t)-1;

__attribute__((constructor)) static void remember_user(void)
{
	start_uid = geteuid();
	start_gid = getegid();
}

/* A hint for a write that failed with e, or "". */
static const char *user_hint(int e, char *buf, size_t cap)
{
	buf[0] = '\0';
	if ((e != EACCES && e != EPERM) || start_uid == (uid_t)-1)
		return buf;
	uid_t u = geteuid();
	gid_t g = getegid();
	if (u != start_uid || g != start_gid)
		snprintf(buf, cap, "; this process now runs as uid %u gid %u, "
			 "not the uid %u gid %u it started as (workers that "
			 "drop privileges): make the directory writable for "
			 "them or set output= to one they can write",
			 (unsigned)u, (unsigned)g, (unsigned)start_uid,
			 (unsigned)start_gid);
	return buf;
}

int dump_write_atomic(const char *path, const void *buf, size_t len)
{
	int rc = dump_write_named(NULL, path, buf, len);
	int e = errno;
	if (rc == 0) {
		uint64_t n = atomic_exchange(&failures, 0);
		if (n > 1)
			rt_log("wrote %s after %llu failed profile writes", path,
			       (unsigned long long)n);
		return 0;
	}
	uint64_t n = atomic_fetch_add(&failures, 1) + 1;
	char hint[256];
	if (n == 1)
		rt_log("cannot write profile %s: %s%s (further failures are "
		       "counted, not each printed)", path, strerror(e),
		       user_hint(e, hint, sizeof hint));
	else if (power_of_ten(n))
		rt_log("cannot write profile %s: %s%s (%llu failures so far)",
		       path, strerror(e), user_hint(e, hint, sizeof hint),
		       (unsigned long long)n);
	errno = e;
	return rc;
}

/* /proc/self/maps into an arena buffer (NUL-terminated). */
static char *read_maps(arena *a)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 65536, n = 0;
	char *buf = arena_alloc(a, cap);
	while (buf) {
		if (n + 1 >= cap) {
			char *nb = arena_realloc(a, buf, cap * 2);
			if (!nb) {
				arena_free(a, buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[n] = '\0';
	return buf;
}

int dump_encode_gzip(ap_profile *p, const ap_allocator *al,
		     unsigned char **out, size_t *len)
{
	/* Field by field into the compressor: the raw encoding is never in
	 * memory whole (clang's: 614 KB in a writer grown to 1 MiB, beside
	 * the profile, for a 97 KB file). */
	int rc = ap_pprof_encode(p, true, al, out, len);
	ap_profile_destroy(p);
	return rc;
}

static int write_pprof(const dump_input *in, ap_profile *p, const char *path)
{
	const ap_allocator *al = arena_allocator(in->a);
	unsigned char *buf = NULL;
	size_t len = 0;
	uint64_t time_ns = (uint64_t)p->time_nanos;
	int rc = dump_encode_gzip(p, al, &buf, &len); /* destroys p */
	if (rc == 0 && !in->no_file)
		rc = dump_write_atomic(path, buf, len);
	else if (rc != 0)
		rt_log("cannot encode profile %s: %s", path, ap_strerror(rc));
	if (rc == 0 && in->on_written)
		in->on_written(buf, len, in->start_realtime_ns, time_ns);
	if (buf)
		al->free(al->ctx, buf, len + 1);
	return rc;
}

static int write_heapv2(const dump_input *in, ap_profile *p, const char *path)
{
	const ap_allocator *al = arena_allocator(in->a);
	char *maps = read_maps(in->a);
	char *text = NULL;
	size_t len = 0;
	int rc = ap_heapv2_encode(p, maps ? maps : "", al, &text, &len);
	if (rc == 0)
		rc = dump_write_atomic(path, text, len);
	else
		rt_log("cannot encode profile %s: %s", path, ap_strerror(rc));
	if (text)
		al->free(al->ctx, text, len);
	arena_free(in->a, maps);
	return rc;
}

int dump_write_file(const dump_input *in, const char *path)
{
	ap_profile *p = NULL;
	int rc = dump_build_profile(in, &p);
	if (rc != 0) {
		rt_log("cannot build profile %s: %s", path, ap_strerror(rc));
		return rc;
	}
	if (in->format != RT_FORMAT_HEAPV2)
		return write_pprof(in, p, path); /* destroys p */
	rc = write_heapv2(in, p, path);
	ap_profile_destroy(p);
	return rc;
}
