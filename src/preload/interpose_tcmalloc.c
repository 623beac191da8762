/*
 * interpose_tcmalloc.c: gperftools' tc_* entry points, which programs
 * linked with -ltcmalloc may call directly (tc_malloc, tc_free, tc_new,
 * tc_delete_sized, ...).
 *
 * Each tc_* function of tcmalloc is its malloc family or C++ operator
 * under another name, so each wrapper here is the runtime's own entry
 * point of that name (interpose.c, interpose_cxx.c): it samples where it
 * allocates, tests the range where it frees, and otherwise reaches the
 * same tcmalloc code through the allocator's malloc or operator. Without
 * them, tc_free of a sampled malloc block would hand tcmalloc a block of
 * allocprof's range ("Attempt to free invalid pointer"), and tc_malloc's
 * blocks would be invisible. The entry points that neither allocate nor
 * take a block (tc_version, tc_mallopt, tc_set_new_mode, ...) are not
 * wrapped: the program reaches tcmalloc's directly.
 */
#include <malloc.h>
#include <stdlib.h>

#include "interpose_next.h"

/* TC(ret, name, params, call): tc_name, exported, returning `call`;
 * TCV(name, params, call): the same for a function returning nothing. */
#define TC(ret, name, params, call)                                          \
	EXPORT ret name params;                                              \
	ret name params                                                      \
	{                                                                    \
		return call;                                                 \
	}
#define TCV(name, params, call)                                              \
	EXPORT void name params;                                             \
	void name params                                                     \
	{                                                                    \
		call;                                                        \
	}

TC(void *, tc_malloc, (size_t n), rt_entry_malloc(n))
TC(void *, tc_malloc_skip_new_handler, (size_t n), rt_entry_malloc(n))
TCV(tc_free, (void *p), rt_entry_free(p))
TCV(tc_free_sized, (void *p, size_t n), rt_entry_free_sized(p, n))
TCV(tc_cfree, (void *p), rt_entry_free(p))
TC(void *, tc_realloc, (void *p, size_t n), rt_entry_realloc(p, n))
TC(void *, tc_calloc, (size_t n, size_t m), rt_entry_calloc(n, m))
TC(void *, tc_memalign, (size_t al, size_t n), rt_entry_memalign(al, n))
TC(int, tc_posix_memalign, (void **out, size_t al, size_t n), rt_entry_posix_memalign(out, al, n))
TC(void *, tc_valloc, (size_t n), rt_entry_valloc(n))
TC(void *, tc_pvalloc, (size_t n), rt_entry_pvalloc(n))
TC(size_t, tc_malloc_size, (void *p), rt_entry_malloc_usable_size(p))
TC(void *, tc_new, (size_t n), rt_entry_nw(n))
TC(void *, tc_newarray, (size_t n), rt_entry_na(n))
TC(void *, tc_new_nothrow, (size_t n, const void *t), rt_entry_nw_t(n, t))
TC(void *, tc_newarray_nothrow, (size_t n, const void *t), rt_entry_na_t(n, t))
TC(void *, tc_new_aligned, (size_t n, size_t al), rt_entry_nw_l(n, al))
TC(void *, tc_newarray_aligned, (size_t n, size_t al), rt_entry_na_l(n, al))
TC(void *, tc_new_aligned_nothrow, (size_t n, size_t al, const void *t), rt_entry_nw_lt(n, al, t))
TC(void *, tc_newarray_aligned_nothrow, (size_t n, size_t al, const void *t),
   rt_entry_na_lt(n, al, t))
TCV(tc_delete, (void *p), rt_entry_dl(p))
TCV(tc_deletearray, (void *p), rt_entry_da(p))
TCV(tc_delete_sized, (void *p, size_t n), rt_entry_dl_s(p, n))
TCV(tc_deletearray_sized, (void *p, size_t n), rt_entry_da_s(p, n))
TCV(tc_delete_nothrow, (void *p, const void *t), rt_entry_dl_t(p, t))
TCV(tc_deletearray_nothrow, (void *p, const void *t), rt_entry_da_t(p, t))
TCV(tc_delete_aligned, (void *p, size_t al), rt_entry_dl_l(p, al))
TCV(tc_deletearray_aligned, (void *p, size_t al), rt_entry_da_l(p, al))
TCV(tc_delete_sized_aligned, (void *p, size_t n, size_t al), rt_entry_dl_sl(p, n, al))
TCV(tc_deletearray_sized_aligned, (void *p, size_t n, size_t al), rt_entry_da_sl(p, n, al))
TCV(tc_delete_aligned_nothrow, (void *p, size_t al, const void *t), rt_entry_dl_lt(p, al, t))
TCV(tc_deletearray_aligned_nothrow, (void *p, size_t al, const void *t),
   rt_entry_da_lt(p, al, t))
