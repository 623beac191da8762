/*
 * preload_region_grow_test.c: what the region (src/preload/region.h) does
 * for realloc growth and for the host's address space and commit charge:
 * in-place resizing within a run, runs reserved with room to grow, the
 * side table made writable only as the range is used (a pointer beyond
 * the used part is refused without touching it), no writable mapping at
 * reservation (what overcommit_memory=2 would charge), and the share of
 * an RLIMIT_AS the reservation may take.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aptest.h"
#include "region.h"

#define MIB ((size_t)1 << 20)

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* This process's VmData in KiB (private writable mappings), or -1. */
static long vm_data_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmData: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

AP_TEST(a_block_grows_and_shrinks_in_place_within_its_run)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 64 * MIB, 0), 0);
	size_t usable = 0;
	/* 17 pages: a 32-page run (the first power-of-two class). */
	char *p = region_alloc(&r, 17 * page(), 0, false, &usable);
	AP_CHECK(p != NULL);
	AP_CHECK_EQ_U64(usable, 17 * page());
	memset(p, 7, usable);
	AP_CHECK(region_resize(&r, p, 32 * page(), &usable));
	AP_CHECK_EQ_U64(usable, 32 * page());
	AP_CHECK(p[17 * page() - 1] == 7);
	memset(p, 8, 32 * page()); /* the grown part is writable */
	AP_CHECK(!region_resize(&r, p, 32 * page() + 1, &usable)); /* past the run */
	AP_CHECK_EQ_U64(usable, 32 * page());
	r.cache_floor = 0; /* no cache budget: a shrunk block's tail goes back */
	AP_CHECK(region_resize(&r, p, 1, &usable));
	AP_CHECK_EQ_U64(usable, page());
	AP_CHECK_EQ_U64(r.slack, 0);
	AP_CHECK(p[0] == 8);
	AP_CHECK(region_resize(&r, p, 2 * page(), &usable));
	AP_CHECK(p[page()] == 0); /* given-back pages read as zero */
	/* Within the budget the tail stays resident as slack: no call. */
	r.cache_floor = 64;
	uint64_t mad = r.st.madvise_calls;
	AP_CHECK(region_resize(&r, p, 1, &usable));
	AP_CHECK_EQ_U64(r.slack, 1);
	AP_CHECK_EQ_U64(r.st.madvise_calls, mad);
	AP_CHECK(!region_resize(&r, p + page(), page(), NULL)); /* interior */
	AP_CHECK(region_free(&r, p, NULL));
	AP_CHECK(!region_resize(&r, p, page(), NULL)); /* freed */
	region_destroy(&r);
}

AP_TEST(a_run_can_be_reserved_with_room_to_grow)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 64 * MIB, 0), 0);
	size_t usable = 0;
	char *p = region_alloc_run(&r, page(), 0, false, 100 * page(), &usable);
	AP_CHECK(p != NULL);
	AP_CHECK_EQ_U64(usable, page()); /* only the block's pages are its */
	AP_CHECK(region_resize(&r, p, 128 * page(), &usable)); /* 128-page run */
	memset(p, 1, 128 * page());
	AP_CHECK(!region_resize(&r, p, 129 * page(), NULL));
	AP_CHECK(region_free(&r, p, NULL));
	/* A reserve beyond the range is ignored, not an error. */
	p = region_alloc_run(&r, page(), 0, false, SIZE_MAX, &usable);
	AP_CHECK(p != NULL);
	AP_CHECK(region_free(&r, p, NULL));
	region_destroy(&r);
}

AP_TEST(pointers_beyond_the_used_part_are_refused_without_a_fault)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 1024 * MIB, 1024 * MIB, 0), 0);
	void *p = region_alloc(&r, 100, 0, false, NULL);
	AP_CHECK(p != NULL);
	/* Far above anything handed out: its side-table slot is not even
	 * writable yet, and must not be read. */
	void *far = (void *)(r.base + r.size - page());
	AP_CHECK(!region_get(&r, far, NULL, NULL));
	AP_CHECK(!region_free(&r, far, NULL));
	AP_CHECK(!region_resize(&r, far, 1, NULL));
	AP_CHECK(region_free(&r, p, NULL));
	region_destroy(&r);
}

AP_TEST(reserving_adds_no_writable_mapping)
{
	long before = vm_data_kib();
	region r;
	AP_CHECK_EQ_INT(region_init(&r, (size_t)16 << 30, 64 * MIB, page()), 0);
	long after = vm_data_kib();
	AP_CHECK(before >= 0 && after >= 0);
	/* 16 GiB of range and 256 MiB of side table reserved; only the one
	 * prefix page is writable (and the kernel rounds nothing up). */
	AP_CHECK(after - before <= 64);
	void *p = region_alloc(&r, 1, 0, false, NULL); /* commits one step */
	AP_CHECK(p != NULL);
	long used = vm_data_kib();
	/* One REGION_RW_STEP of range (1 MiB at 4 KiB pages) and its slots. */
	AP_CHECK(used - after <= (long)((REGION_RW_STEP * page() + REGION_RW_STEP * 64) / 1024) + 8);
	region_destroy(&r);
}

AP_TEST(an_address_space_limit_caps_the_reservation)
{
	/* The limit is the address space in use plus 8 GiB (a sanitizer's
	 * shadow alone can be terabytes), so the reservation fits under it
	 * at 4 GiB; it must take no more than 1/REGION_AS_SHARE of it. */
	long vm_kib = -1;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmSize: %ld", &vm_kib) == 1)
			break;
	if (f)
		fclose(f);
	AP_CHECK(vm_kib > 0);
	size_t limit = (size_t)vm_kib * 1024 + ((size_t)8 << 30);
	pid_t pid = fork();
	AP_CHECK(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
		if (setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(3);
		region r;
		if (region_init(&r, (size_t)64 << 30, 64 * MIB, page()) != 0)
			_exit(4);
		_exit(r.size <= limit / REGION_AS_SHARE ? 0 : 5);
	}
	int st = 0;
	AP_CHECK(waitpid(pid, &st, 0) == pid);
	AP_CHECK(WIFEXITED(st));
	AP_CHECK_EQ_INT(WEXITSTATUS(st), 0);
}
