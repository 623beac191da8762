/*
 * gzstream.h: gzip output fed in pieces (codec.c), for encoders that write
 * a large message without holding all of it: the pprof encoder hands each
 * top-level field to the compressor as it is written, so a profile is
 * never in memory twice (as structures and as its raw encoding).
 *
 * apx_gz_begin takes the total length that will be fed: the window and the
 * output buffer are sized from it, as ap_gzip_compress sizes them for a
 * whole buffer. Errors are sticky: apx_gz_feed does nothing after one, and
 * apx_gz_end reports it. apx_gz_end always releases the stream.
 */
#ifndef ALLOCPROF_GZSTREAM_H
#define ALLOCPROF_GZSTREAM_H

#include <stddef.h>

#include "allocprof/common.h"

typedef struct apx_gz apx_gz;

/* A gzip stream at `level` (-1..9) for `total` bytes of input, state and
 * output from alloc (NULL: libc). 0, AP_EINVAL or AP_ENOMEM. */
int apx_gz_begin(apx_gz **g, size_t total, int level, const ap_allocator *alloc);
/* Compress len more bytes. */
void apx_gz_feed(apx_gz *g, const void *in, size_t len);
/* Finish: the gzip member in *out (len + 1 bytes from alloc, NUL after
 * the data), or the first error; the stream is freed either way. */
int apx_gz_end(apx_gz *g, unsigned char **out, size_t *out_len);

#endif
