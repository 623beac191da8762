/*
 * common.c: the library-wide error strings and the default (libc) allocator
 * behind the ap_allocator seam declared in allocprof/common.h.
 */
#include "allocprof/common.h"

#include <stdlib.h>

const char *ap_strerror(int code)
{
	switch (code) {
	case AP_OK: return "success";
	case AP_EINVAL: return "invalid argument";
	case AP_ENOMEM: return "out of memory";
	case AP_ERANGE: return "value out of range";
	case AP_ECORRUPT: return "malformed or truncated input";
	case AP_EVERSION: return "unsupported format version";
	case AP_EIO: return "input/output error";
	case AP_ENOTFOUND: return "not found";
	case AP_EUNSUPPORTED: return "unsupported input";
	case AP_EBUSY: return "busy, try again";
	default: return "unknown error";
	}
}

static void *libc_alloc(void *ctx, size_t n)
{
	(void)ctx;
	return malloc(n ? n : 1);
}

static void *libc_realloc(void *ctx, void *p, size_t old_n, size_t new_n)
{
	(void)ctx;
	(void)old_n;
	return realloc(p, new_n ? new_n : 1);
}

static void libc_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	(void)n;
	free(p);
}

static const ap_allocator libc_allocator = {
	libc_alloc, libc_realloc, libc_free, NULL
};

const ap_allocator *ap_allocator_libc(void)
{
	return &libc_allocator;
}
