/*
 * fdr.h: Benjamini-Hochberg q-values over an array of result structs, shared
 * by the diff test (difftest.c) and the leak test (leak.c): each reads the
 * p-value at one offset of its struct and writes the q-value at another.
 */
#ifndef ALLOCPROF_LIB_FDR_H
#define ALLOCPROF_LIB_FDR_H

#include <stddef.h>

#include "allocprof/common.h"

/* For n items of stride bytes at items: q (double at q_off) = BH q-value
 * of p (double at p_off), as ap_diff_qvalues. 0, AP_EINVAL, AP_ENOMEM. */
int apx_qvalues_strided(void *items, size_t n, size_t stride, size_t p_off,
			size_t q_off, const ap_allocator *alloc);

#endif
