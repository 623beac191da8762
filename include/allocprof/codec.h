/*
 * allocprof/codec.h: byte codecs profiles travel in: gzip (RFC 1952, through
 * zlib) and base64 (RFC 4648, standard alphabet).
 *
 * Every function allocates its output with the given allocator (NULL = libc;
 * zlib's own working memory comes from it too), returns 0 or a negative AP_E*
 * code, and leaves *out NULL on failure. The caller frees *out with the same
 * allocator, passing the size *out_len + 1 (outputs carry one extra NUL
 * byte so text results can be used as C strings).
 */
#ifndef ALLOCPROF_CODEC_H
#define ALLOCPROF_CODEC_H

#include <stdbool.h>
#include <stddef.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default bound for ap_gzip_decompress's output: 1 GiB. */
#define AP_GZIP_MAX_DEFAULT ((size_t)1 << 30)

/* True when buf starts with the gzip magic bytes 0x1f 0x8b. */
AP_API bool ap_gzip_detect(const void *buf, size_t len);

/*
 * Compress (in, len) into a gzip member. level 0..9, or -1 for zlib's
 * default. AP_EINVAL for a bad level, AP_ENOMEM, AP_ERANGE when the input
 * is too large for zlib.
 */
AP_API int ap_gzip_compress(const void *in, size_t len, int level,
			    const ap_allocator *alloc, unsigned char **out,
			    size_t *out_len);

/*
 * Decompress gzip data: one member or several concatenated (as gzip(1)
 * allows). At most max_out bytes of output are produced (0 means
 * AP_GZIP_MAX_DEFAULT), which defeats decompression bombs. Returns
 * AP_ECORRUPT (bad header, data or checksum, truncation, trailing bytes),
 * AP_ERANGE (output would exceed max_out) or AP_ENOMEM; with err non-NULL a
 * one-line reason is written there.
 */
AP_API int ap_gzip_decompress(const void *in, size_t len, size_t max_out,
			      const ap_allocator *alloc, unsigned char **out,
			      size_t *out_len, char *err, size_t errlen);

/*
 * Input step shared by decoders that accept plain or gzip'd data: when
 * (in, len) starts with the gzip magic it is decompressed (at most max_len
 * bytes) into *plain, to be freed with size *plain_len + 1; otherwise
 * *plain is NULL and the input itself, at most max_len bytes, is used.
 * Either way *data / *data_len is what to parse. Errors as for
 * ap_gzip_decompress, plus AP_ERANGE for plain input over max_len.
 */
AP_API int ap_gzip_input(const unsigned char *in, size_t len, size_t max_len,
			 const ap_allocator *alloc, const unsigned char **data,
			 size_t *data_len, unsigned char **plain,
			 size_t *plain_len, char *err, size_t errlen);

/* Encoded length of n bytes (with padding), or 0 when it overflows. */
AP_API size_t ap_base64_encoded_len(size_t n);

/* Encode with '=' padding; *out is NUL-terminated. */
AP_API int ap_base64_encode(const void *in, size_t len,
			    const ap_allocator *alloc, char **out,
			    size_t *out_len);

/*
 * Decode base64. Padding is optional but, when present, must be correct;
 * whitespace and characters outside the alphabet are AP_ECORRUPT, as are
 * non-zero leftover bits (so every byte string has one accepted encoding
 * per padding choice).
 */
AP_API int ap_base64_decode(const char *in, size_t len,
			    const ap_allocator *alloc, unsigned char **out,
			    size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_CODEC_H */
