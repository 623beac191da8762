/*
 * ehtrim.c: giving back the pages of unwind tables that stack captures read
 * (ehtrim.h).
 *
 * Each object's unwind tables are .eh_frame_hdr (PT_GNU_EH_FRAME: a sorted
 * table of (function start, entry) pairs) and .eh_frame (the entries), next
 * to each other in the same read-only segment; which comes first depends on
 * the linker (GNU ld: the header; LLVM's libraries here: the entries). The
 * header gives where .eh_frame starts; its end is found once by walking its
 * length fields to the zero terminator, or is the header when the header
 * follows. The span of both, cut to whole pages inside their segment, is
 * what a trim gives back.
 *
 * All of it runs inside the runtime (guard set) without allocating; the
 * ranges found are kept in a small table, looked up by header address.
 */
#include "ehtrim.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime_core.h"
#include "sampled_set.h"

#define CACHE_MAX 256
#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_SWAPPED (UINT64_C(1) << 62)
#define PM_FILE (UINT64_C(1) << 61)

typedef struct eh_span {
	uintptr_t hdr;    /* the object's .eh_frame_hdr (key) */
	uintptr_t lo, hi; /* both sections, whole pages; lo == hi: nothing */
} eh_span;

static bool trim_on;
static uintptr_t page = 4096; /* the system's, from ehtrim_init */
static atomic_bool busy;
static _Atomic uint64_t pending;
static _Atomic uint64_t last_ns;  /* CLOCK_MONOTONIC of the last trim */
static atomic_bool deferred;      /* a trim waits for EHTRIM_GAP_NS */
static _Atomic uint64_t n_trims, n_pages, n_lookups;
/* Written only by the thread holding busy (and pm, below). */
static eh_span spans[CACHE_MAX];
static int nspans;

/* Is the process under a seccomp filter? ("Seccomp:" of /proc/self/status;
 * unknown counts as yes.) */
static bool under_filter(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	const char *p = strstr(buf, "\nSeccomp:");
	if (!p)
		return false; /* a kernel without seccomp */
	p += 9;
	while (*p == ' ' || *p == '\t')
		p++;
	return *p != '0';
}

void ehtrim_init(bool on)
{
	long ps = sysconf(_SC_PAGESIZE);
	if (ps > 0 && !(ps & (ps - 1)))
		page = (uintptr_t)ps;
	trim_on = on && !under_filter();
}

void ehtrim_atfork_child(void)
{
	/* A fork while another thread trimmed leaves busy set in the child,
	 * whose only thread is not that one. */
	atomic_store(&busy, false);
}

void ehtrim_stats(uint64_t *lookups, uint64_t *trims, uint64_t *kib)
{
	*lookups = atomic_load(&n_lookups);
	*trims = atomic_load(&n_trims);
	*kib = atomic_load(&n_pages) * (page / 1024);
}

/* A pointer of the header in encoding enc at *p (pc-relative or relative
 * to the header, 4 or 8 bytes: what linkers write); false for others. */
static bool read_ptr(const uint8_t *p, uint8_t enc, uintptr_t hdr, uintptr_t *out)
{
	int64_t v;
	switch (enc & 0x0f) {
	case 0x03: { /* udata4 */
		uint32_t x;
		memcpy(&x, p, 4);
		v = x;
		break;
	}
	case 0x0b: { /* sdata4 */
		int32_t x;
		memcpy(&x, p, 4);
		v = x;
		break;
	}
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		memcpy(&v, p, 8);
		break;
	default:
		return false;
	}
	switch (enc & 0x70) {
	case 0x10: /* pcrel */
		*out = (uintptr_t)p + (uintptr_t)v;
		return true;
	case 0x30: /* datarel: from the header's start */
		*out = hdr + (uintptr_t)v;
		return true;
	default:
		return false;
	}
}

/* The end of the .eh_frame at eh, inside [eh, limit): past its zero
 * terminator, or where the entries stop fitting. */
static uintptr_t eh_frame_end(uintptr_t eh, uintptr_t limit)
{
	uintptr_t p = eh;
	while (limit - p >= 4) {
		uint32_t len;
		memcpy(&len, (const void *)p, 4);
		if (len == 0)
			return p + 4;
		uint64_t size = 4 + (uint64_t)len;
		if (len == 0xffffffffu) {
			if (limit - p < 12)
				break;
			uint64_t len64;
			memcpy(&len64, (const void *)(p + 4), 8);
			if (len64 > limit - p - 12)
				break; /* also: 12 + len64 would wrap */
			size = 12 + len64;
		}
		if (size > limit - p)
			break;
		p += size;
	}
	return p;
}

static bool has_textrel(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_DYNAMIC)
			continue;
		for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		     d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_TEXTREL ||
			    (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)))
				return true;
	}
	return false;
}

bool ehtrim_tables_span(uintptr_t hdr, size_t hdr_len, uintptr_t seg_lo, uintptr_t seg_hi,
			uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = 0;
	/* version, three encodings, and the .eh_frame pointer (at most 8) */
	if (hdr_len < 12 || hdr < seg_lo || hdr > seg_hi || hdr_len > seg_hi - hdr)
		return false;
	const uint8_t *h = (const uint8_t *)hdr;
	uintptr_t frame;
	if (h[0] != 1 || !read_ptr(h + 4, h[1], hdr, &frame) || frame < seg_lo || frame >= seg_hi)
		return false;
	uintptr_t a, b;
	if (frame < hdr) {
		a = frame;
		b = hdr + hdr_len;
	} else {
		a = hdr;
		b = eh_frame_end(frame, seg_hi);
	}
	/* inward to whole pages */
	a = (a + page - 1) & ~(page - 1);
	b &= ~(page - 1);
	if (a >= b)
		return false;
	*lo = a;
	*hi = b;
	return true;
}

/* The span of info's unwind tables (whole pages of a read-only segment),
 * or false. */
static bool find_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	const ElfW(Phdr) *eh = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	if (!eh)
		return false;
	uintptr_t hdr = info->dlpi_addr + eh->p_vaddr;
	uintptr_t hdr_end = hdr + eh->p_memsz;
	/* The segment holding the header: read-only, and the bound of
	 * everything below. */
	uintptr_t seg_lo = 0, seg_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && hdr >= a && hdr_end <= a + ph->p_filesz) {
			if (ph->p_flags & PF_W)
				return false;
			seg_lo = a;
			seg_hi = a + ph->p_filesz;
		}
	}
	if (!seg_hi)
		return false;
	for (int i = 0; i < nspans; i++)
		if (spans[i].hdr == hdr) {
			/* Cut to this segment: the object that was at hdr may
			 * have been unloaded and another loaded there. */
			*lo = spans[i].lo > seg_lo ? spans[i].lo : seg_lo;
			*hi = spans[i].hi < seg_hi ? spans[i].hi : seg_hi;
			return *lo < *hi;
		}
	uintptr_t a, b;
	(void)ehtrim_tables_span(hdr, eh->p_memsz, seg_lo, seg_hi, &a, &b);
	if (nspans < CACHE_MAX)
		spans[nspans++] = (eh_span){ hdr, a, b };
	*lo = a;
	*hi = b;
	return a < b;
}

typedef struct trim_ctx {
	int pm;        /* /proc/self/pagemap */
	uintptr_t vdso;
	long pages;    /* resident pages given back */
} trim_ctx;

/* Give back [lo, hi): madvise over each run of pages that are file pages
 * or not resident (nothing to lose either way), split at private copies
 * and swapped pages; only runs that hold a resident page are advised. */
static uint64_t pm[1024]; /* the trimming thread's (busy) */

static void trim_span(trim_ctx *c, uintptr_t lo, uintptr_t hi)
{
	uintptr_t run = 0; /* start of the current run, 0: none */
	long run_res = 0;
	for (uintptr_t p = lo; p < hi;) {
		size_t n = (hi - p) / page;
		if (n > sizeof pm / sizeof pm[0])
			n = sizeof pm / sizeof pm[0];
		ssize_t got = pread(c->pm, pm, n * sizeof pm[0], (off_t)(p / page * sizeof pm[0]));
		if (got != (ssize_t)(n * sizeof pm[0]))
			return; /* the run so far is not advised either */
		for (size_t i = 0; i < n; i++, p += page) {
			uint64_t e = pm[i];
			bool ok = (e & PM_PRESENT) ? (e & PM_FILE) != 0 : !(e & PM_SWAPPED);
			if (ok) {
				if (!run)
					run = p;
				run_res += (e & PM_PRESENT) != 0;
				continue;
			}
			if (run && run_res && madvise((void *)run, p - run, MADV_DONTNEED) == 0)
				c->pages += run_res;
			run = 0;
			run_res = 0;
		}
	}
	if (run && run_res && madvise((void *)run, hi - run, MADV_DONTNEED) == 0)
		c->pages += run_res;
}

static int trim_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	trim_ctx *c = data;
	if ((c->vdso && info->dlpi_addr == c->vdso) ||
	    (info->dlpi_name && !strncmp(info->dlpi_name, "linux-vdso", 10)))
		return 0; /* the kernel's, not a file */
	uintptr_t lo, hi;
	if (!find_span(info, &lo, &hi) || has_textrel(info))
		return 0;
	trim_span(c, lo, hi);
	return 0;
}

static long trim(void)
{
	int e = errno;
	trim_ctx c = { .pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC),
		       .vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR) };
	if (c.pm < 0) {
		errno = e;
		return -1;
	}
	dl_iterate_phdr(trim_cb, &c);
	close(c.pm);
	errno = e;
	atomic_fetch_add(&n_trims, 1);
	atomic_fetch_add(&n_pages, (uint64_t)c.pages);
	return c.pages;
}

long ehtrim_run(void)
{
	if (!trim_on || atomic_load(&rt.sandboxed) || atomic_exchange(&busy, true))
		return -1;
	atomic_store(&pending, 0);
	long r = trim();
	atomic_store(&busy, false);
	return r;
}

/* A trim is due EHTRIM_GAP_NS after the last: run it now. */
static void trim_now(uint64_t now)
{
	atomic_store(&last_ns, now);
	atomic_store(&deferred, false);
	(void)ehtrim_run();
}

void ehtrim_note(unsigned k)
{
	atomic_fetch_add_explicit(&n_lookups, k, memory_order_relaxed);
	if (!trim_on || atomic_fetch_add(&pending, k) + k < EHTRIM_EVERY)
		return;
	uint64_t now = set_now_ns(); /* CLOCK_MONOTONIC, as the dumper's */
	if (now - atomic_load(&last_ns) >= EHTRIM_GAP_NS)
		trim_now(now);
	else if (!atomic_exchange(&deferred, true))
		dumper_wake(); /* to trim at ehtrim_deadline */
}

void ehtrim_before_dump(void)
{
	if (trim_on && atomic_load(&pending) > 0)
		trim_now(set_now_ns());
}

uint64_t ehtrim_deadline(void)
{
	return atomic_load(&deferred) ? atomic_load(&last_ns) + EHTRIM_GAP_NS : 0;
}

void ehtrim_poll(uint64_t now)
{
	if (atomic_load(&deferred) && now - atomic_load(&last_ns) >= EHTRIM_GAP_NS)
		trim_now(now);
}
