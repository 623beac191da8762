/*
 * eh_pages.c: 8192 functions built without frame pointers (CMakeLists.txt),
 * each allocating once, so that at rate=1 the libunwind unwinder looks up
 * the unwind tables of each; then the 256 of libs/eh_lib.c (a library of
 * its own: lookups in its tables, not the program's); then the resident
 * pages of the program's unwind tables, for
 * tests/integration/preload_ehtrim_test.sh:
 *
 *   eh_pages        -> "eh_pages RESIDENT TOTAL"
 *   eh_pages dump   the program's functions only, then at once a profile
 *                   (ap_runtime_dump, found with dlsym), then the count:
 *                   a dump is made after the trim it calls for, whenever
 *                   the last one was
 *
 * TOTAL is the number of pages of the program's unwind tables (find,
 * below), RESIDENT how many of them are mapped in the process (present in
 * /proc/self/pagemap). The program itself
 * never reads them: it throws no exception.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eh_fns.h"

void eh_lib_run(void); /* libs/eh_lib.c */

#define FN(k) EH_FN(f##k)
#define REF(k) f##k,
/* f1DDDDDDD: 8192 functions */
EH_L6(FN, 10)
EH_L6(FN, 11)
static void (*const fns[])(void) = { EH_L6(REF, 10) EH_L6(REF, 11) };

typedef struct span {
	uintptr_t lo, hi;
} span;

/* The span of the program's unwind tables, in whole pages: from
 * .eh_frame_hdr to the end of its segment when .eh_frame follows it (GNU
 * ld, lld), from .eh_frame to the header's end when it precedes it (gold). */
static int find(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	span *s = data;
	const ElfW(Phdr) *eh = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	if (!eh)
		return 1;
	const unsigned char *h = (const unsigned char *)(info->dlpi_addr + eh->p_vaddr);
	if (h[0] != 1 || h[1] != 0x1b) /* version 1, pc-relative sdata4 */
		return 1;
	int32_t off;
	memcpy(&off, h + 4, 4);
	uintptr_t hdr = (uintptr_t)h, frame = hdr + 4 + (uintptr_t)(intptr_t)off;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || hdr < a || hdr >= a + ph->p_filesz)
			continue;
		if (frame > hdr) {
			s->lo = hdr;
			s->hi = a + ph->p_filesz;
		} else {
			s->lo = frame;
			s->hi = hdr + eh->p_memsz;
		}
		s->lo &= ~(uintptr_t)4095;
		s->hi = (s->hi + 4095) & ~(uintptr_t)4095;
	}
	return 1; /* the program is the first object */
}

int main(int argc, char **argv)
{
	bool dump = argc > 1 && strcmp(argv[1], "dump") == 0;
	/* The span first: find reads the header, and a read of the program's
	 * own after the lookups would map pages around it again. */
	span s = { 0, 0 };
	dl_iterate_phdr(find, &s);
	int (*dump_now)(const char *) = NULL;
	void *sym = dlsym(RTLD_DEFAULT, "ap_runtime_dump");
	memcpy(&dump_now, &sym, sizeof sym);
	size_t n = sizeof fns / sizeof fns[0];
	for (size_t i = 0; i < n; i++)
		fns[i]();
	if (dump) {
		/* Within 50 ms of the last trim, as a dump at exit may be. */
		if (!dump_now || dump_now(NULL) != 0) {
			fprintf(stderr, "eh_pages: no profile written\n");
			return 1;
		}
	} else {
		/* Then lookups elsewhere only: enough for several trims after
		 * the last lookup of the program's own tables. */
		eh_lib_run();
		/* The runtime trims at most every 50 ms; one it held back is
		 * made by its dumper thread when that time has passed: wait
		 * well past it. */
		usleep(500000);
	}
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (!s.hi || fd < 0) {
		fprintf(stderr, "eh_pages: cannot find the unwind tables or read pagemap\n");
		return 1;
	}
	long resident = 0, total = 0;
	for (uintptr_t p = s.lo; p < s.hi; p += 4096, total++) {
		uint64_t e;
		if (pread(fd, &e, sizeof e, (off_t)(p / 4096 * sizeof e)) != sizeof e) {
			fprintf(stderr, "eh_pages: pagemap read failed\n");
			return 1;
		}
		resident += (e >> 63) & 1;
	}
	close(fd);
	printf("eh_pages %ld %ld\n", resident, total);
	return 0;
}
