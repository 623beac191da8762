/*
 * symserv.c: the symbol service of the HTTP endpoint (/debug/pprof/symbol,
 * http_pprof.h), answered from the objects' full symbol tables.
 *
 * `go tool pprof` POSTs the addresses its own symbolization could not
 * name: with binaries built without debug information, every one of them.
 * dladdr only knows the dynamic symbols, so static functions (and the
 * main program's functions, unless linked with -rdynamic) stayed
 * anonymous. Here, on the HTTP server thread, off the program's paths:
 *
 *  - the addresses are grouped by the mapping that holds them (the same
 *    list a profile carries: loaded objects, then dlclose'd ones);
 *  - each object's file is opened and checked (ELF header; its build ID
 *    must be the one loaded, so a binary replaced on disk is not read);
 *  - names come from its .symtab; when it is stripped, from the separate
 *    debug file /usr/lib/debug/.build-id/XX/REST.debug named by its build
 *    ID (Debian's -dbg/-dbgsym packages); else from its .dynsym;
 *  - an address no table names gets, when the unwind tables say which
 *    function holds it, that function's start ("object+0xOFFSET", as the
 *    command names it); else (a file that cannot be read) dladdr's
 *    answer, as before.
 *
 * Memory: a scratch arena for the request (the addresses, the mapping
 * list, one 64 KiB buffer the tables stream through, the names found),
 * unmapped at the end; never the program's heap. The ELF reading is
 * elfsym.c's, bounds-checked and fuzzed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump.h"
#include "elfsym.h"
#include "http_pprof.h"

#define SYM_BUF 65536
#define SYM_NAME_MAX 1024
#define DEBUG_ROOT "/usr/lib/debug/.build-id/"

static int pread_all(void *ctx, uint64_t off, void *buf, size_t n)
{
	int fd = *(int *)ctx;
	size_t done = 0;
	while (done < n) {
		ssize_t k = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	return 0;
}

/* Open path as an ELF file of this process's class. fd >= 0 or -1. */
static int open_elf(const char *path, int *fd, elfsym_file *f)
{
	struct stat st;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -1;
	memset(f, 0, sizeof *f);
	f->read = pread_all;
	f->ctx = fd;
	if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (f->size = (uint64_t)st.st_size, elfsym_open(f) != 0)) {
		close(*fd);
		*fd = -1;
	}
	return *fd;
}

struct names {
	arena *a;
	char **v; /* by query tag */
	void *buf;
};

/* Names for q from f's table of type; AP_ENOTFOUND when f has none. */
static int name_from(const elfsym_file *f, uint32_t type, elfsym_query *q, size_t n,
		     struct names *out)
{
	for (size_t i = 0; i < n; i++)
		q[i].name_off = q[i].name_max = q[i].start = q[i].rank = 0;
	int rc = elfsym_lookup(f, type, q, n, out->buf, SYM_BUF);
	if (rc != 0)
		return rc;
	char name[SYM_NAME_MAX];
	for (size_t i = 0; i < n; i++) {
		size_t k = elfsym_name(f, &q[i], name, sizeof name);
		char *copy = k ? arena_alloc(out->a, k + 1) : NULL;
		if (copy)
			out->v[q[i].tag] = memcpy(copy, name, k + 1);
	}
	return 0;
}

/* The stripped object's .symtab from its build-ID debug file. */
static int name_from_debug(const char *build_id, elfsym_query *q, size_t n,
			   struct names *out)
{
	char path[sizeof DEBUG_ROOT + 2 * 64 + 8];
	size_t len = strlen(build_id);
	if (len < 4 || len > 2 * 64)
		return AP_ENOTFOUND;
	snprintf(path, sizeof path, DEBUG_ROOT "%.2s/%s.debug", build_id, build_id + 2);
	int fd;
	elfsym_file f;
	if (open_elf(path, &fd, &f) < 0)
		return AP_ENOTFOUND;
	int rc = name_from(&f, SHT_SYMTAB, q, n, out);
	close(fd);
	return rc;
}

/* Name the queries of one mapping (vaddr: offset into the mapping). */
static void name_mapping(const dump_mapping *m, elfsym_query *q, size_t n,
			 struct names *out)
{
	int fd;
	elfsym_file f;
	char id[2 * 64 + 1];
	uint64_t seg;
	if (open_elf(m->path, &fd, &f) < 0)
		return;
	if ((m->build_id[0] && elfsym_build_id(&f, id, sizeof id) == 0 &&
	     strcmp(id, m->build_id) != 0) ||
	    elfsym_segment_vaddr(&f, m->offset, &seg) != 0) {
		close(fd);
		return;
	}
	for (size_t i = 0; i < n; i++)
		q[i].vaddr += seg;
	elfsym_sort(q, n);
	int rc = name_from(&f, SHT_SYMTAB, q, n, out);
	if (rc == AP_ENOTFOUND && m->build_id[0])
		rc = name_from_debug(m->build_id, q, n, out);
	if (rc == AP_ENOTFOUND)
		name_from(&f, SHT_DYNSYM, q, n, out);
	/* What no table names (a stripped object's local functions): the
	 * start of its function, from the unwind tables, as the command's
	 * symbolizer names it (docs/REPORTS.md), so one function's call
	 * sites are one function in pprof too. */
	const char *base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	for (size_t i = 0; i < n; i++) {
		uint64_t start, off;
		char name[SYM_NAME_MAX];
		if (out->v[q[i].tag] ||
		    elfsym_function_start(&f, q[i].vaddr, &start, &off) != 0)
			continue;
		int k = snprintf(name, sizeof name, "%s+0x%llx", *base ? base : "?",
				 (unsigned long long)off);
		char *copy = k > 0 && (size_t)k < sizeof name ? arena_alloc(out->a, (size_t)k + 1)
							      : NULL;
		if (copy)
			out->v[q[i].tag] = memcpy(copy, name, (size_t)k + 1);
	}
	close(fd);
}

/* The addresses of body ('+'-separated "0x..." tokens; 0 = not one). */
static uint64_t *parse_addresses(arena *a, const char *body, size_t n, size_t *count)
{
	size_t k = 1;
	for (size_t i = 0; i < n; i++)
		k += body[i] == '+';
	uint64_t *v = arena_alloc(a, k * sizeof *v);
	if (!v)
		return NULL;
	size_t i = 0, j = 0;
	while (i <= n && j < k) {
		size_t e = i;
		while (e < n && body[e] != '+')
			e++;
		uint64_t x = 0;
		bool ok = e - i > 2 && e - i <= 18 && body[i] == '0' && (body[i + 1] | 0x20) == 'x';
		for (size_t p = i + 2; ok && p < e; p++) {
			char c = (char)(body[p] | 0x20);
			ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
			x = x * 16 + (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
		}
		v[j++] = ok ? x : 0;
		i = e + 1;
	}
	*count = j;
	return v;
}

void http_pprof_symbolize(const char *body, size_t n, http_buf *out)
{
	arena a;
	if (arena_init(&a) != 0) {
		out->failed = true;
		return;
	}
	size_t count = 0, nmaps = 0;
	uint64_t *addr = parse_addresses(&a, body, n, &count);
	elfsym_query *q = addr ? arena_alloc(&a, (count + 1) * sizeof *q) : NULL;
	struct names names = { &a, q ? arena_alloc(&a, (count + 1) * sizeof(char *)) : NULL,
			       q ? arena_alloc(&a, SYM_BUF) : NULL };
	dump_mapping *maps = NULL;
	if (!names.v || !names.buf || dump_list_mappings(&a, &maps, &nmaps) != 0) {
		count = 0;
		out->failed = true;
	}
	for (size_t i = 0; i < nmaps; i++) {
		size_t nq = 0;
		for (size_t k = 0; k < count; k++)
			if (addr[k] >= maps[i].start && addr[k] < maps[i].limit && !names.v[k])
				q[nq++] = (elfsym_query){ .vaddr = addr[k] - maps[i].start,
							  .tag = k };
		if (nq)
			name_mapping(&maps[i], q, nq, &names);
	}
	for (size_t k = 0; k < count; k++) {
		Dl_info info;
		const char *name = names.v[k];
		if (!name && addr[k] && dladdr((void *)(uintptr_t)addr[k], &info))
			name = info.dli_sname;
		if (name && addr[k])
			hb_printf(out, "%#llx %s\n", (unsigned long long)addr[k], name);
	}
	/* Blocks over 64 KiB have mappings of their own: free them first. */
	arena_free(&a, maps);
	arena_free(&a, names.buf);
	arena_free(&a, names.v);
	arena_free(&a, q);
	arena_free(&a, addr);
	arena_destroy(&a);
}
