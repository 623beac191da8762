/*
 * shim_alloc.c: a wrapper preloaded under the runtime that defines malloc,
 * free, calloc and realloc (each passing the call on to glibc) but not
 * posix_memalign, as small debugging shims do; for
 * tests/integration/preload_shim_test.sh. The runtime cannot rebuild the
 * memalign family on such an allocator, so it samples nothing; the
 * program must still run as it would without the runtime. Every call is
 * counted, and the count is appended at exit to the file AP_SHIM_OUT
 * names (a file, not stderr: coreutils close stderr before destructors
 * run), so the test can tell that the calls did reach the shim.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);

static unsigned long calls;

EXPORT void *malloc(size_t n)
{
	__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
	return __libc_malloc(n);
}

EXPORT void free(void *p)
{
	__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
	__libc_free(p);
}

EXPORT void *calloc(size_t n, size_t m)
{
	__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
	return __libc_calloc(n, m);
}

EXPORT void *realloc(void *p, size_t n)
{
	__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
	return __libc_realloc(p, n);
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("AP_SHIM_OUT");
	if (!path)
		return;
	char b[64];
	int k = snprintf(b, sizeof b, "calls=%lu\n",
			 __atomic_load_n(&calls, __ATOMIC_RELAXED));
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (k > 0)
		(void)!write(fd, b, (size_t)k);
	close(fd);
}
