/*
 * preload_elfsym_test.c: the symbol service's names (symserv.c) and the
 * ELF reader under it (elfsym.h). This test's own static functions are
 * named from its .symtab (dladdr cannot name them), libc's from its
 * tables; bad addresses are left out; and the reader, given every prefix
 * and many corrupted copies of this executable, never reads outside the
 * bytes it was given.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocprof/prng.h"
#include "aptest.h"
#include "elfsym.h"
#include "http_buf.h"
#include "http_pprof.h"

__attribute__((noinline)) static int hidden_helper(int x)
{
	return x * 7 + 1;
}

int (*volatile keep_helper)(int) = hidden_helper;

/* The symbol service's answer for body. */
static char *symbolize(const char *body, arena *a)
{
	http_buf out;
	hb_init(&out, a);
	http_pprof_symbolize(body, strlen(body), &out);
	hb_put(&out, "", 1);
	char *s = hb_failed(&out) ? NULL : strdup(out.p);
	hb_free(&out);
	return s;
}

AP_TEST(static_functions_of_the_program_and_libc_are_named)
{
	arena a;
	AP_CHECK_EQ_INT(arena_init(&a), 0);
	char body[256], want[128];
	uintptr_t in_helper = (uintptr_t)keep_helper + 2;
	uintptr_t in_malloc = (uintptr_t)dlsym(RTLD_DEFAULT, "malloc") + 1;
	Dl_info info;
	AP_CHECK(dladdr((void *)in_helper, &info) == 0 || !info.dli_sname ||
		 strcmp(info.dli_sname, "hidden_helper") != 0); /* dladdr cannot */
	snprintf(body, sizeof body, "0x%lx+0x10+0xzz+junk+0x%lx+",
		 (unsigned long)in_helper, (unsigned long)in_malloc);
	char *s = symbolize(body, &a);
	AP_CHECK(s != NULL);
	snprintf(want, sizeof want, "%#lx hidden_helper\n", (unsigned long)in_helper);
	AP_CHECK_MSG(strstr(s, want) != NULL, "answer:\n%s", s);
	/* libc's malloc (or an alias at its address: __libc_malloc). */
	snprintf(want, sizeof want, "%#lx ", (unsigned long)in_malloc);
	const char *m = strstr(s, want);
	AP_CHECK_MSG(m && strstr(m, "malloc") && strchr(m, '\n') > strstr(m, "malloc"),
		     "answer:\n%s", s);
	/* Only the two good addresses get a line, and nothing is versioned. */
	size_t lines = 0;
	for (const char *p = s; *p; p++)
		lines += *p == '\n';
	AP_CHECK_EQ_U64(lines, 2);
	AP_CHECK(strchr(s, '@') == NULL);
	free(s);
	arena_destroy(&a);
}

struct mem {
	const unsigned char *p;
	size_t n;
};

static int mem_read(void *ctx, uint64_t off, void *buf, size_t n)
{
	const struct mem *m = ctx;
	if (off > m->n || n > m->n - off) {
		fprintf(stderr, "read outside the file: %llu+%zu of %zu\n",
			(unsigned long long)off, n, m->n);
		abort();
	}
	memcpy(buf, m->p + off, n);
	return 0;
}

/* Every entry point on (p, n); the number of names found. */
static size_t exercise(const unsigned char *p, size_t n, uint64_t helper_vaddr)
{
	struct mem m = { p, n };
	elfsym_file f = { .read = mem_read, .ctx = &m, .size = n };
	if (elfsym_open(&f) != 0)
		return 0;
	char hex[129], name[128];
	uint64_t v;
	(void)elfsym_build_id(&f, hex, sizeof hex);
	(void)elfsym_segment_vaddr(&f, 0, &v);
	elfsym_query q[2] = { { .vaddr = helper_vaddr }, { .vaddr = helper_vaddr + 1 } };
	static unsigned char buf[1024];
	size_t named = 0;
	if (elfsym_lookup(&f, SHT_SYMTAB, q, 2, buf, sizeof buf) == 0)
		for (size_t i = 0; i < 2; i++)
			named += elfsym_name(&f, &q[i], name, sizeof name) > 0;
	/* The unwind tables: the helper's start, from inside it. */
	uint64_t start = 0, off;
	if (elfsym_function_start(&f, helper_vaddr + 2, &start, &off) == 0 &&
	    start == helper_vaddr)
		named++;
	return named;
}

/* The main program's load bias (it comes first). */
static int main_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

static unsigned char *read_self(size_t *n)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	struct stat st;
	*n = 0;
	if (fd < 0 || fstat(fd, &st) != 0)
		return NULL;
	unsigned char *p = malloc((size_t)st.st_size);
	if (p && read(fd, p, (size_t)st.st_size) == st.st_size)
		*n = (size_t)st.st_size;
	close(fd);
	return p;
}

/* hidden_helper's address in the file's p_vaddr terms. */
static uint64_t helper_vaddr(void)
{
	uintptr_t bias = 0;
	dl_iterate_phdr(main_bias, &bias);
	return (uintptr_t)keep_helper - bias;
}

AP_TEST(prefixes_and_corrupted_copies_stay_in_bounds)
{
	size_t n;
	unsigned char *self = read_self(&n);
	AP_CHECK(self != NULL && n > 0);
	uint64_t vaddr = helper_vaddr();
	AP_CHECK_EQ_U64(exercise(self, n, vaddr), 3);
	/* Prefixes: every header boundary and a spread of lengths. */
	for (size_t k = 0; k < n; k += k < 4096 ? 1 : 997)
		(void)exercise(self, k, vaddr);
	/* Corrupted copies: 2000 copies with 8 random bytes changed in the
	 * first 64 KiB (the headers and tables of a small binary), fixed seed. */
	unsigned char *copy = malloc(n);
	AP_CHECK(copy != NULL);
	ap_prng rng;
	ap_prng_seed(&rng, 20261127);
	size_t span = n < 65536 ? n : 65536;
	for (int t = 0; t < 2000; t++) {
		memcpy(copy, self, n);
		for (int j = 0; j < 8; j++)
			copy[ap_prng_next(&rng) % span] = (unsigned char)ap_prng_next(&rng);
		(void)exercise(copy, n, vaddr);
	}
	free(copy);
	free(self);
}

struct seg_query {
	uint64_t vaddr, off;
	bool found;
};

/* The file offset of the main program's vaddr, from its loaded headers. */
static int main_offset(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct seg_query *s = data;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && s->vaddr >= ph->p_vaddr &&
		    s->vaddr < ph->p_vaddr + ph->p_filesz) {
			s->off = s->vaddr - ph->p_vaddr + ph->p_offset;
			s->found = true;
		}
	}
	return 1;
}

AP_TEST(function_starts_come_from_the_unwind_tables)
{
	size_t n;
	unsigned char *self = read_self(&n);
	AP_CHECK(self != NULL && n > 0);
	uint64_t helper = helper_vaddr();
	struct mem m = { self, n };
	elfsym_file f = { .read = mem_read, .ctx = &m, .size = n };
	AP_CHECK_EQ_INT(elfsym_open(&f), 0);
	struct seg_query s = { .vaddr = helper };
	dl_iterate_phdr(main_offset, &s);
	AP_CHECK(s.found);
	/* Every byte of the helper's first 8 is in the helper. */
	for (uint64_t d = 0; d < 8; d++) {
		uint64_t start = 0, off = 0;
		AP_CHECK_EQ_INT(elfsym_function_start(&f, helper + d, &start, &off), 0);
		AP_CHECK_EQ_U64(start, helper);
		AP_CHECK_EQ_U64(off, s.off);
	}
	/* The ELF header is in no function. */
	uint64_t start, off;
	AP_CHECK_EQ_INT(elfsym_function_start(&f, 0x10, &start, &off), AP_ENOTFOUND);
	/* Nor is anything past the last function's end. */
	AP_CHECK_EQ_INT(elfsym_function_start(&f, UINT64_MAX / 2, &start, &off), AP_ENOTFOUND);
	free(self);
}
