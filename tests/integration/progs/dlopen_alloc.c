/*
 * dlopen_alloc.c: allocations made by code in a library that is unloaded
 * before the profile is written. Each round dlopens libz, lets deflateInit2
 * allocate its state (several malloc calls inside libz), ends the stream
 * and dlcloses the library; the last round keeps its stream alive, so the
 * exit dump holds live samples whose stacks point into an object that is no
 * longer mapped. The runtime must still write a readable profile.
 *
 * Prints one deterministic line; exit 77 when libz.so.1 is not installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h> /* types only: the library itself comes from dlopen */

typedef int (*deflate_init2_fn)(z_stream *strm, int level, int method,
				int window_bits, int mem_level, int strategy,
				const char *version, int stream_size);
typedef int (*deflate_end_fn)(z_stream *strm);
typedef const char *(*zlib_version_fn)(void);

static z_stream *kept_stream;

static int one_round(int keep)
{
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 77;
	deflate_init2_fn init = (deflate_init2_fn)dlsym(h, "deflateInit2_");
	deflate_end_fn end = (deflate_end_fn)dlsym(h, "deflateEnd");
	zlib_version_fn version = (zlib_version_fn)dlsym(h, "zlibVersion");
	if (!init || !end || !version) {
		fprintf(stderr, "dlopen_alloc: libz lacks deflateInit2_\n");
		return 2;
	}
	z_stream *strm = calloc(1, sizeof *strm); /* zalloc = NULL: malloc */
	if (!strm)
		return 2;
	if (init(strm, 6, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY, version(),
		 (int)sizeof *strm)) {
		fprintf(stderr, "dlopen_alloc: deflateInit2 failed\n");
		return 2;
	}
	if (keep) {
		kept_stream = strm; /* its state stays allocated */
	} else {
		end(strm);
		free(strm);
	}
	dlclose(h);
	return 0;
}

int main(void)
{
	for (int i = 0; i < 50; i++) {
		int rc = one_round(i == 49);
		if (rc)
			return rc;
	}
	printf("dlopen_alloc: 50 rounds, one stream kept: %s\n",
	       kept_stream ? "yes" : "no");
	return 0;
}
