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

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocprof/codec.h"
#include "allocprof/estimate.h"
#include "config.h"
#include "log.h"
#include "unwinder.h"
#if __has_include("allocprof/heapv2.h")
#include "allocprof/heapv2.h"
#define DUMP_HAVE_HEAPV2 1
#endif


/* ---- mappings -------------------------------------------------------------- */

typedef struct map_ent {
	uint64_t start, limit, offset;
	char path[PATH_MAX];
	char build_id[2 * 64 + 1];
} map_ent;

typedef struct map_list {
	arena *a;
	map_ent *v;
	size_t n, cap;
	bool failed;
} map_list;

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

static int map_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	map_list *l = data;
	char path[PATH_MAX];
	if (l->n == 0 && (!info->dlpi_name || !info->dlpi_name[0])) {
		/* The main program comes first, with an empty name. */
		ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
		if (k <= 0)
			return 0;
		path[k] = '\0';
	} else {
		/* Objects without a file (the vDSO) cannot be symbolized. */
		if (!info->dlpi_name || info->dlpi_name[0] != '/')
			return 0;
		if (!realpath(info->dlpi_name, path)) {
			size_t k = strlen(info->dlpi_name);
			if (k >= sizeof path)
				return 0;
			memcpy(path, info->dlpi_name, k + 1);
		}
	}
	char build_id[sizeof l->v[0].build_id];
	find_build_id(info, build_id, sizeof build_id);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			map_ent *nv = arena_realloc(l->a, l->v, cap * sizeof *nv);
			if (!nv) {
				l->failed = true;
				return 1;
			}
			l->v = nv;
			l->cap = cap;
		}
		map_ent *m = &l->v[l->n++];
		m->start = info->dlpi_addr + ph->p_vaddr;
		m->limit = m->start + ph->p_memsz;
		m->offset = ph->p_offset;
		memcpy(m->path, path, strlen(path) + 1);
		memcpy(m->build_id, build_id, sizeof build_id);
	}
	return 0;
}

static int add_mappings(ap_profile *p, arena *a, map_list *l)
{
	l->a = a;
	dl_iterate_phdr(map_cb, l);
	if (l->failed)
		return AP_ENOMEM;
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
		int rc = ap_profile_add_mapping(p, &m, &id);
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
			size_t j = (m->addr[i] * 0x9E3779B97F4A7C15ULL) >> 7 & (cap - 1);
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
	size_t j = (addr * 0x9E3779B97F4A7C15ULL) >> 7 & (m->cap - 1);
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

/*
 * Values are written rounded without bias (ap_round_unbiased): llround
 * turns a weight in (1, 2) into 1 and a small variance into 0, which
 * over many lines biases sums and makes rows look exact. The coin of a
 * (line, column) comes from the line's identity (its return addresses,
 * size and rate, stable across the dumps of one process) and the column.
 * Negatives are float residue of add-then-subtract and NaN is nothing:
 * both are written 0.
 */
static int64_t rnd(double x, uint64_t key, uint32_t column)
{
	if (!(x > 0))
		return 0;
	return ap_round_unbiased(x, key ^ ap_round_key(NULL, 0, column));
}

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

/*
 * The DUMP_NVALUES values: ap_profile_init_heap's fourteen, then
 * ap_profile_add_row_types' six (var2 sums stored in ap_var2_encode
 * units of the line's rate).
 */
#define DUMP_NVALUES 20
static void site_values(const site_snap *s, int64_t v[DUMP_NVALUES])
{
	const site_counts *a = &s->alloc, *u = &s->inuse;
	bool live = u->samples > 0;
	uint64_t k = line_key(s);
	double r = (double)s->rate;
	v[0] = rnd(a->objects, k, 0);
	v[1] = rnd(a->space, k, 1);
	v[2] = live ? rnd(u->objects, k, 2) : 0;
	v[3] = live ? rnd(u->space, k, 3) : 0;
	v[4] = (int64_t)a->samples;
	v[5] = rnd(a->u, k, 5);
	v[6] = rnd(a->space_var, k, 6);
	v[7] = rnd(a->objects_var, k, 7);
	v[8] = (int64_t)u->samples;
	v[9] = live ? rnd(u->u, k, 9) : 0;
	v[10] = live ? rnd(u->space_var, k, 10) : 0;
	v[11] = live ? rnd(u->objects_var, k, 11) : 0;
	v[12] = rnd(a->usable, k, 12);
	v[13] = live ? rnd(u->usable, k, 13) : 0;
	v[14] = (int64_t)a->exact;
	v[15] = rnd(ap_var2_encode(a->space_var2, r), k, 15);
	v[16] = rnd(ap_var2_encode(a->objects_var2, r), k, 16);
	v[17] = live ? (int64_t)u->exact : 0;
	v[18] = live ? rnd(ap_var2_encode(u->space_var2, r), k, 18) : 0;
	v[19] = live ? rnd(ap_var2_encode(u->objects_var2, r), k, 19) : 0;
}

static int add_samples(ap_profile *p, const dump_input *in, const map_list *maps)
{
	site_snap *sites;
	size_t n;
	int rc = table_snapshot(in->table, &sites, &n, NULL);
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
		int64_t vals[DUMP_NVALUES];
		site_values(s, vals);
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

/* "allocprof.hist.NAME=" + base64(binary encoding of h). */
static int add_hist_comment(ap_profile *p, arena *a, const char *name, const ap_hist *h)
{
	const ap_allocator *al = arena_allocator(a);
	ap_hist_snap *snap = NULL;
	unsigned char *bin = NULL;
	char *b64 = NULL, *text = NULL;
	size_t bin_len = 0, b64_len = 0;
	int rc = ap_hist_snapshot(h, al, &snap);
	if (rc == 0)
		rc = ap_hist_encode(snap, al, &bin, &bin_len);
	if (rc == 0)
		rc = ap_base64_encode(bin, bin_len, al, &b64, &b64_len);
	if (rc == 0) {
		size_t need = strlen(AP_COMMENT_HIST_PREFIX) + strlen(name) + 1 + b64_len + 1;
		text = arena_alloc(a, need);
		if (!text)
			rc = AP_ENOMEM;
		else {
			snprintf(text, need, "%s%s=%s", AP_COMMENT_HIST_PREFIX, name, b64);
			rc = ap_profile_add_comment(p, text);
		}
	}
	arena_free(a, text);
	arena_free(a, b64);
	if (bin)
		ap_hist_buffer_free(al, bin, bin_len);
	ap_hist_snap_destroy(snap);
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
	if (rc == 0)
		rc = ap_profile_add_row_types(p);
	uint64_t now = realtime_now();
	p->time_nanos = (int64_t)now;
	p->duration_nanos = now > in->start_realtime_ns
				    ? (int64_t)(now - in->start_realtime_ns) : 0;
	if (rc == 0 && in->with_mappings)
		rc = add_mappings(p, in->a, &maps);
	if (rc == 0)
		rc = add_samples(p, in, in->with_mappings ? &maps : NULL);
	if (rc == 0)
		rc = add_process(p, in);
	if (rc == 0)
		rc = add_hist_comment(p, in->a, "alloc_size", in->table->hist_size);
	if (rc == 0)
		rc = add_hist_comment(p, in->a, "lifetime_ns", in->table->hist_lifetime);
	arena_free(in->a, maps.v);
	if (rc != 0) {
		ap_profile_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* ---- writing ---------------------------------------------------------------- */

int dump_write_atomic(const char *path, const void *buf, size_t len)
{
	if (ap_file_write_atomic(path, buf, len, 0600) == 0)
		return 0;
	int e = errno;
	rt_log("cannot write profile %s: %s", path, strerror(e));
	errno = e;
	return AP_EIO;
}

#ifdef DUMP_HAVE_HEAPV2
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
#endif

static int write_pprof(const dump_input *in, ap_profile *p, const char *path)
{
	const ap_allocator *al = arena_allocator(in->a);
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc = ap_pprof_encode(p, true, al, &buf, &len);
	if (rc == 0)
		rc = dump_write_atomic(path, buf, len);
	else
		rt_log("cannot encode profile %s: %s", path, ap_strerror(rc));
	if (buf)
		al->free(al->ctx, buf, len);
	return rc;
}

static int write_heapv2(const dump_input *in, ap_profile *p, const char *path)
{
#ifdef DUMP_HAVE_HEAPV2
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
#else
	rt_log("format=heap_v2 is not available in this build; writing pprof to %s",
	       path);
	return write_pprof(in, p, path);
#endif
}

int dump_write_file(const dump_input *in, const char *path)
{
	ap_profile *p = NULL;
	int rc = dump_build_profile(in, &p);
	if (rc != 0) {
		rt_log("cannot build profile %s: %s", path, ap_strerror(rc));
		return rc;
	}
	if (in->format == RT_FORMAT_HEAPV2)
		rc = write_heapv2(in, p, path);
	else
		rc = write_pprof(in, p, path);
	ap_profile_destroy(p);
	return rc;
}
