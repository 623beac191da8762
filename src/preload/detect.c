/*
 * detect.c: is the runtime blind to the program's allocations? (detect.h)
 *
 * In the unit tests the core is linked into the test program without the
 * interposed malloc: the probe below then sees libc's malloc, which does
 * not touch the sampler counter, and reports blindness; unit tests do not
 * call detect_init.
 */
#include "detect.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_core.h"

static char warning[320];
static atomic_bool printed;
static uint64_t anon_at_start;
static atomic_bool elsewhere; /* detect_malloc_elsewhere */

/* Anonymous resident memory in bytes (RssAnon in /proc/self/status): what
 * a heap that is used occupies, unlike the address space allocators
 * reserve; 0 if unknown. */
static uint64_t anon_bytes(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strstr(buf, "\nRssAnon:");
	unsigned long long kb;
	if (!p || sscanf(p + 9, " %llu", &kb) != 1)
		return 0;
	return (uint64_t)kb << 10;
}

/*
 * Does a call to the malloc the program gets reach the runtime? dlsym's
 * address alone cannot say: an executable that calls malloc may export a
 * canonical PLT entry of its own that leads to the runtime anyway. So the
 * probe calls it once: the runtime's fast path takes the size off this
 * thread's sampler counter, anything else leaves the counter alone. The
 * counter is set high for the probe (no sample can be drawn) and restored.
 */
static bool malloc_reaches_runtime(void *found, void *found_free)
{
	void *(*m)(size_t);
	void (*f)(void *);
	memcpy(&m, &found, sizeof m);
	memcpy(&f, &found_free, sizeof f);
	int64_t saved = rt_tls.sampler.bytes_until_sample;
	rt_tls.sampler.bytes_until_sample = (int64_t)1 << 40;
	void *p = m(16);
	bool seen = rt_tls.sampler.bytes_until_sample != (int64_t)1 << 40;
	rt_tls.sampler.bytes_until_sample = saved;
	if (p && f)
		f(p);
	return seen;
}

/* Does the object have a Go build-ID note ("Go", type 4) in a PT_NOTE
 * segment? Go's linker puts one in every executable it writes. Read in
 * memory: no file, no allocation. */
static int go_note_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
			ElfW(Nhdr) nh;
			memcpy(&nh, p, sizeof nh);
			size_t name = (nh.n_namesz + 3u) & ~3u, desc = (nh.n_descsz + 3u) & ~3u;
			const char *next = p + sizeof nh;
			if (name > (size_t)(end - next) || desc > (size_t)(end - next) - name)
				break;
			/* Go writes the name as "Go\0\0" (size 4) */
			if (nh.n_type == 4 && (nh.n_namesz == 3 || nh.n_namesz == 4) &&
			    !memcmp(next, "Go", 3)) {
				*(bool *)data = true;
				return 1;
			}
			p = next + name + desc;
		}
	}
	return 1; /* the first object is the executable: stop there */
}

void detect_go_exit(void)
{
	bool go = false;
	dl_iterate_phdr(go_note_cb, &go);
	if (go && rt.opt.dump_at_exit && !rt.opt.interval_ns)
		rt_log("this is a Go program: Go ends the process without running "
		       "exit handlers, so no profile is written at exit; use "
		       "interval= for periodic profiles, http=, or allocprof attach");
}

void detect_init(void)
{
	anon_at_start = anon_bytes();
	void *found = dlsym(RTLD_DEFAULT, "malloc");
	void *found_free = dlsym(RTLD_DEFAULT, "free");
	if (!found || !found_free || malloc_reaches_runtime(found, found_free))
		return;
	Dl_info di;
	const char *where = dladdr(found, &di) && di.dli_fname && di.dli_fname[0]
				    ? di.dli_fname : "another object";
	bool shared = strstr(where, ".so") != NULL;
	atomic_store(&elsewhere, true);
	snprintf(warning, sizeof warning,
		 "the program's malloc is %s's, not allocprof's (%s): its "
		 "allocations are not seen and profiles are empty", where,
		 shared ? "put allocprof first in LD_PRELOAD"
			: "an allocator linked into the program");
	if (!atomic_exchange(&printed, true))
		rt_log("%s", warning);
}

bool detect_malloc_elsewhere(void)
{
	return atomic_load(&elsewhere);
}

const char *detect_warning(void)
{
	if (!warning[0] && anon_at_start) {
		table_totals tot;
		table_totals_get(&rt.table, &tot);
		uint64_t now = anon_bytes();
		/* Were the growth malloc'd, 64 rates of it would go unsampled
		 * with probability e^-64. */
		uint64_t enough = 64 * rt.opt.rate > DETECT_GROWTH ? 64 * rt.opt.rate
								   : DETECT_GROWTH;
		if (tot.samples == 0 && now > anon_at_start &&
		    now - anon_at_start >= enough)
			snprintf(warning, sizeof warning,
				 "no allocation reached allocprof while the "
				 "process's anonymous memory grew by %llu MiB (an allocator of the "
				 "program's own?): that memory is not in the profiles",
				 (unsigned long long)((now - anon_at_start) >> 20));
	}
	if (!warning[0])
		return NULL;
	if (!atomic_exchange(&printed, true))
		rt_log("%s", warning);
	return warning;
}
