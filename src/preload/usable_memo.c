/*
 * usable_memo.c: the usable size the underlying allocator would give a
 * request (rt_underlying_usable, runtime_core.h), for sampled blocks the
 * runtime serves from its own range.
 */
#include "runtime_core.h"

#include <stdatomic.h>

/*
 * A sampled block served from allocprof's range is whole pages, which the
 * program never sees as its allocator's usable size; weighted by 1/pi it
 * made --usable report ~4096 x N for sites of 16-byte objects (issue 12,
 * item 5). Asked of the allocator once per size (malloc, its usable size,
 * free; we are inside the runtime, so these go straight to it) and
 * memoised in a direct-mapped table of packed (size, slack) words, racy
 * but never wrong: an entry is whole or replaced whole.
 */
#define USABLE_MEMO 1024
static _Atomic uint64_t usable_memo[USABLE_MEMO];

uint64_t rt_underlying_usable(uint64_t size)
{
	size_t i = (size_t)((size * 0x9E3779B97F4A7C15ULL) >> 54) & (USABLE_MEMO - 1);
	uint64_t e = atomic_load_explicit(&usable_memo[i], memory_order_relaxed);
	if (e && e >> 20 == size)
		return size + (e & 0xFFFFF);
	void *q = rt_real.malloc(size);
	uint64_t u = q ? rt_real.malloc_usable_size(q) : size;
	rt_real.free(q);
	if (u < size)
		u = size;
	if (size < (1ULL << 44) && u - size < (1ULL << 20))
		atomic_store_explicit(&usable_memo[i], size << 20 | (u - size),
				      memory_order_relaxed);
	return u;
}

