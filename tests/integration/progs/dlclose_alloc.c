/*
 * dlclose_alloc.c: live allocations made inside a library that is then
 * really unloaded. It dlopens libbz2 (which no profiler runtime depends
 * on, so dlclose unmaps it), lets BZ2_bzCompressInit allocate its state
 * (about 3.6 MB in several malloc calls inside libbz2), keeps the stream
 * alive and dlcloses the library. A profile written at exit must still name
 * libbz2 for those samples (tests/integration/preload_dlclose_test.sh).
 *
 * Prints "ok"; exit 77 when libbz2.so.1.0 is not installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The parts of bzlib.h's bz_stream this program touches; the library
 * itself comes from dlopen, so its header is not needed. */
typedef struct {
	char *next_in;
	unsigned int avail_in, total_in_lo32, total_in_hi32;
	char *next_out;
	unsigned int avail_out, total_out_lo32, total_out_hi32;
	void *state;
	void *(*bzalloc)(void *, int, int);
	void (*bzfree)(void *, void *);
	void *opaque;
} bz_stream;

typedef int (*compress_init_fn)(bz_stream *s, int block, int verbosity, int work);

static bz_stream kept;

int main(void)
{
	void *h = dlopen("libbz2.so.1.0", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 77;
	compress_init_fn init = (compress_init_fn)dlsym(h, "BZ2_bzCompressInit");
	if (!init)
		return 2;
	memset(&kept, 0, sizeof kept);
	if (init(&kept, 9, 0, 0) != 0)
		return 3;
	if (dlclose(h) != 0)
		return 4;
	/* The library must really be gone for the test to mean anything. */
	if (dlopen("libbz2.so.1.0", RTLD_NOW | RTLD_NOLOAD))
		return 5;
	printf("ok\n");
	return 0;
}
