/*
 * symbolize_test.c: libdw symbolization end to end. The test builds a
 * profile the way the runtime does (one mapping per executable PT_LOAD
 * segment of this very program and of libstdc++, real build IDs, caller
 * addresses = return address - 1), writes it, and runs the built CLI on it
 * (the symbolizer lives in the allocprof command, not in a library the
 * tests link). Checks: function names, files and call-site lines of real
 * frames; an inlined function shows as its own frame above its caller;
 * C++ names are demangled; a build-ID mismatch leaves that mapping's frames
 * as addresses with one warning; a missing program is a one-line error
 * (exit 2) unless --no-symbolize. AP_TEST_OWN_FRAMES: built with debug
 * information and real frames in any build type (tests/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allocprof/profile.h"
#include "aptest.h"

static int line_alpha, line_beta, line_inner, line_outer;

__attribute__((noinline)) static uint64_t caller_pc(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0) - 1;
}

__attribute__((noinline)) static uint64_t site_alpha(void)
{
	uint64_t pc = caller_pc(); line_alpha = __LINE__;
	return pc;
}

__attribute__((noinline)) static uint64_t site_beta(void)
{
	uint64_t pc = caller_pc(); line_beta = __LINE__;
	return pc;
}

static inline __attribute__((always_inline)) uint64_t inner_inlined(void)
{
	uint64_t pc = caller_pc(); line_inner = __LINE__;
	return pc;
}

__attribute__((noinline)) static uint64_t outer_of_inline(void)
{
	uint64_t pc = inner_inlined(); line_outer = __LINE__;
	return pc;
}

/* Mappings of the running program and libstdc++, as the runtime writes them. */
struct phdr_ctx {
	ap_profile *p;
	const char *want; /* substring of the object's name; "" = main program */
	int rc, added;
};

static void build_id_hex(struct dl_phdr_info *info, char *out, size_t n)
{
	out[0] = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *q = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = q + ph->p_memsz;
		while (q + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)q;
			const unsigned char *name = q + sizeof *nh;
			const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4)) {
				for (unsigned j = 0; j < nh->n_descsz && 2 * j + 2 < n; j++)
					snprintf(out + 2 * j, 3, "%02x", desc[j]);
				return;
			}
			q = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
}

static int add_mappings(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct phdr_ctx *c = arg;
	char path[4096], bid[128];
	bool main_prog = info->dlpi_name[0] == 0;
	if (c->added || (*c->want ? !strstr(info->dlpi_name, c->want) : !main_prog))
		return 0;
	if (main_prog) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
		path[n > 0 ? n : 0] = 0;
	} else if (!realpath(info->dlpi_name, path)) {
		return 0;
	}
	build_id_hex(info, bid, sizeof bid);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		ap_mapping m = {0};
		m.memory_start = info->dlpi_addr + ph->p_vaddr;
		m.memory_limit = m.memory_start + ph->p_memsz;
		m.file_offset = ph->p_offset;
		m.filename = ap_profile_intern(c->p, path);
		m.build_id = ap_profile_intern(c->p, bid);
		uint64_t id;
		c->rc |= ap_profile_add_mapping(c->p, &m, &id);
		c->added = 1;
	}
	return 0;
}

static uint64_t mapping_for(const ap_profile *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nmappings; i++)
		if (addr >= p->mappings[i].memory_start && addr < p->mappings[i].memory_limit)
			return p->mappings[i].id;
	return 0;
}

/* One sample per stack (leaf first), alloc_space = 1000 * (index + 1). */
static int add_stack(ap_profile *p, const uint64_t *pcs, size_t n, int64_t bytes)
{
	uint64_t ids[8];
	for (size_t i = 0; i < n; i++) {
		ap_location l = {0, mapping_for(p, pcs[i]), pcs[i], NULL, 0, false};
		int rc = ap_profile_add_location(p, &l, &ids[i]);
		if (rc)
			return rc;
	}
	int64_t vals[4] = {1, bytes, 1, bytes};
	return ap_profile_add_sample(p, ids, n, vals, NULL, 0);
}

static char *write_profile(const ap_profile *p)
{
	unsigned char *buf;
	size_t len;
	char *path = strdup("/tmp/symbolize_test.XXXXXX");
	int fd = path ? mkstemp(path) : -1;
	if (fd < 0 || ap_pprof_encode(p, true, NULL, &buf, &len))
		return NULL;
	ssize_t w = write(fd, buf, len);
	close(fd);
	free(buf);
	return w == (ssize_t)len ? path : NULL;
}

/* Run the CLI; captures stdout (and stderr when err is non-NULL). */
static int run_cli(const char *args, char **out, char **err)
{
	char cmd[8192], errpath[] = "/tmp/symbolize_err.XXXXXX";
	int efd = mkstemp(errpath);
	if (efd < 0)
		return -1;
	close(efd);
	snprintf(cmd, sizeof cmd, "'%s/allocprof' %s 2>%s", ap_test_bindir(), args,
		 errpath);
	FILE *f = popen(cmd, "r");
	size_t cap = 1 << 20, n = 0;
	*out = calloc(1, cap + 1);
	while (f && *out && n < cap) {
		size_t r = fread(*out + n, 1, cap - n, f);
		if (!r)
			break;
		n += r;
	}
	int st = f ? pclose(f) : -1;
	if (err) {
		FILE *e = fopen(errpath, "r");
		*err = calloc(1, 4097);
		if (e && *err)
			(void)!fread(*err, 1, 4096, e);
		if (e)
			fclose(e);
	}
	unlink(errpath);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static ap_profile *base_profile(void)
{
	ap_profile *p;
	if (ap_profile_create(NULL, &p))
		return NULL;
	ap_profile_add_sample_type(p, "alloc_objects", "count");
	ap_profile_add_sample_type(p, "alloc_space", "bytes");
	ap_profile_add_sample_type(p, "inuse_objects", "count");
	ap_profile_add_sample_type(p, "inuse_space", "bytes");
	p->period = 1;
	return p;
}

AP_TEST(frames_have_names_files_lines_and_inlines)
{
	ap_profile *p = base_profile();
	struct phdr_ctx c = {p, "", 0, 0};
	AP_CHECK(p);
	dl_iterate_phdr(add_mappings, &c);
	AP_CHECK(c.rc == 0 && c.added);
	uint64_t a[2] = {site_alpha(), 0}, b[1] = {site_beta()}, in[1] = {outer_of_inline()};
	a[1] = b[0];
	AP_CHECK(add_stack(p, a, 2, 1000) == 0);
	AP_CHECK(add_stack(p, in, 1, 2000) == 0);
	char *path = write_profile(p);
	ap_profile_destroy(p);
	AP_CHECK(path);
	char args[512], *out, *err;
	snprintf(args, sizeof args, "convert --to json --symbolize '%s'", path);
	int rc = run_cli(args, &out, &err);
	AP_CHECK_MSG(rc == 0 && out, "exit %d: %s", rc, err ? err : "");
	char want[256];
	snprintf(want, sizeof want,
		 "\"function\":\"site_alpha\",\"file\":\"%s\",\"line\":%d,",
		 __FILE__, line_alpha);
	AP_CHECK_MSG(strstr(out, want), "no '%s' in %s", want, out);
	snprintf(want, sizeof want, "\"function\":\"site_beta\",\"file\":\"%s\",\"line\":%d,",
		 __FILE__, line_beta);
	AP_CHECK_MSG(strstr(out, want), "no '%s' in %s", want, out);
	/* the inline frame first (inlined: true), then the function it is in,
	 * at the line where it was inlined */
	snprintf(want, sizeof want,
		 "\"function\":\"inner_inlined\",\"file\":\"%s\",\"line\":%d,\"inlined\":true}",
		 __FILE__, line_inner);
	AP_CHECK_MSG(strstr(out, want), "no '%s' in %s", want, out);
	snprintf(want, sizeof want,
		 "\"function\":\"outer_of_inline\",\"file\":\"%s\",\"line\":%d,\"inlined\":false}",
		 __FILE__, line_outer);
	AP_CHECK_MSG(strstr(out, want), "no '%s' in %s", want, out);
	free(out);
	free(err);
	/* report --by line names the same call sites */
	snprintf(args, sizeof args, "report --alloc --by line --json '%s'", path);
	rc = run_cli(args, &out, NULL);
	snprintf(want, sizeof want, "\"name\":\"inner_inlined %s:%d\"", __FILE__, line_inner);
	AP_CHECK_MSG(rc == 0 && strstr(out, want), "no '%s' in %s", want, out);
	free(out);
	unlink(path);
	free(path);
}

AP_TEST(cxx_names_are_demangled)
{
	void *h = dlopen("libstdc++.so.6", RTLD_NOW);
	if (!h)
		AP_SKIP("libstdc++.so.6 not installed: %s", dlerror());
	void *fn = dlsym(h, "_ZNSt6chrono3_V212system_clock3nowEv");
	AP_CHECK(fn);
	ap_profile *p = base_profile();
	struct phdr_ctx c = {p, "libstdc++", 0, 0};
	dl_iterate_phdr(add_mappings, &c);
	AP_CHECK(c.added);
	uint64_t pc[1] = {(uint64_t)(uintptr_t)fn + 2};
	AP_CHECK(add_stack(p, pc, 1, 10) == 0);
	char *path = write_profile(p);
	ap_profile_destroy(p);
	char args[512], *out;
	snprintf(args, sizeof args, "report --alloc --json '%s'", path);
	int rc = run_cli(args, &out, NULL);
	AP_CHECK_MSG(rc == 0 && strstr(out, "\"function\":\"std::chrono::_V2::system_clock::now\""),
		     "exit %d: %s", rc, out);
	free(out);
	unlink(path);
	free(path);
}

AP_TEST(build_id_mismatch_leaves_addresses_and_warns_once)
{
	ap_profile *p = base_profile();
	struct phdr_ctx c = {p, "", 0, 0};
	dl_iterate_phdr(add_mappings, &c);
	AP_CHECK(c.added);
	/* the same file claimed at another address with a wrong build ID */
	const ap_mapping *real = &p->mappings[0];
	ap_mapping fake = *real;
	fake.id = 0;
	fake.memory_start = 0x7f0000000000ull;
	fake.memory_limit = fake.memory_start + (real->memory_limit - real->memory_start);
	fake.build_id = ap_profile_intern(p, "00112233445566778899aabbccddeeff00112233");
	uint64_t fid;
	AP_CHECK(ap_profile_add_mapping(p, &fake, &fid) == 0);
	uint64_t pc1[1] = {fake.memory_start + 0x10}, pc2[1] = {fake.memory_start + 0x20};
	AP_CHECK(add_stack(p, pc1, 1, 10) == 0 && add_stack(p, pc2, 1, 20) == 0);
	char *path = write_profile(p);
	ap_profile_destroy(p);
	char args[512], *out, *err;
	snprintf(args, sizeof args, "report --alloc --json '%s'", path);
	int rc = run_cli(args, &out, &err);
	AP_CHECK_MSG(rc == 0, "exit %d: %s", rc, err);
	AP_CHECK_MSG(strstr(out, "symbolize_test+0x"), "%s", out);
	char *w = strstr(err, "differs from the profile's");
	AP_CHECK_MSG(w && !strstr(w + 1, "differs from"), "warnings: %s", err);
	free(out);
	free(err);
	unlink(path);
	free(path);
}

AP_TEST(missing_program_is_a_one_line_error)
{
	ap_profile *p = base_profile();
	ap_mapping m = {0};
	m.memory_start = 0x400000;
	m.memory_limit = 0x500000;
	m.filename = ap_profile_intern(p, "/nonexistent/dir/prog");
	m.build_id = ap_profile_intern(p, "abcdef");
	uint64_t id;
	AP_CHECK(ap_profile_add_mapping(p, &m, &id) == 0);
	uint64_t pc[1] = {0x401000};
	AP_CHECK(add_stack(p, pc, 1, 10) == 0);
	char *path = write_profile(p);
	ap_profile_destroy(p);
	char args[512], *out, *err;
	snprintf(args, sizeof args, "report '%s'", path);
	int rc = run_cli(args, &out, &err);
	AP_CHECK_EQ_INT(rc, 2);
	AP_CHECK_MSG(strstr(err, "/nonexistent/dir/prog") && strchr(err, '\n') &&
			     !strchr(strchr(err, '\n') + 1, '\n'),
		     "stderr: %s", err);
	free(out);
	free(err);
	snprintf(args, sizeof args, "report --no-symbolize --alloc --json '%s'", path);
	rc = run_cli(args, &out, NULL);
	AP_CHECK_MSG(rc == 0 && strstr(out, "prog+0x1000"), "exit %d: %s", rc, out);
	free(out);
	unlink(path);
	free(path);
}
