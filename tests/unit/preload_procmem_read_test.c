/*
 * preload_procmem_read_test.c: one real reading of this process's memory
 * (procmem.h): the kernel's figures, glibc's mallinfo2, statm and PSI.
 * Linking the readers brings in the runtime's state, whose initialisation
 * says on stderr that this test's malloc is libc's: expected here.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aptest.h"
#include "procmem.h"

AP_TEST(this_process_is_measured)
{
	void *p = malloc(1 << 20);
	memset(p, 1, 1 << 20);
	ap_memory m;
	procmem_read(&m, true);
	uint64_t rss, anon, alloc;
	AP_CHECK(ap_memory_get(&m, AP_MEM_RSS, &rss) && rss > (1 << 20));
	AP_CHECK(ap_memory_get(&m, AP_MEM_ANON, &anon) && anon <= rss);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* (a sanitizer's malloc is not glibc's: mallinfo2 would not see it) */
	AP_CHECK(strcmp(m.allocator, "glibc") == 0);
	AP_CHECK(ap_memory_get(&m, AP_MEM_ALLOC_ALLOCATED, &alloc) && alloc >= (1 << 20));
#else
	(void)alloc;
#endif
	uint64_t statm;
	AP_CHECK(procmem_rss(&statm) && statm > 0);
	uint32_t psi;
	if (access("/proc/pressure/memory", R_OK) == 0) /* the kernel has PSI */
		AP_CHECK(procmem_psi(&psi) && psi <= 10000);
	free(p);
}
