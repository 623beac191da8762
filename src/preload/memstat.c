/*
 * memstat.c: the runtime's account of its own memory, one line on stderr
 * at exit with verbose=1 (bench/suites/memory.sh reads it).
 *
 * What the runtime holds besides the program's sampled blocks: the warm
 * cache of freed runs and the slack of reused ones (region.h), the side
 * table's accessible part, the arena's mappings (stack table, sites,
 * histograms), the sampled set's table when design 1 is in use. Peaks are
 * the region's own (committed + cache at their largest), the rest is the
 * size at exit, after the exit dump has unmapped its scratch arena.
 * samples= counts every sample recorded, wherever its block lives (the
 * range's warm/cold/fresh count only the blocks it served: range=1).
 */
#include "memstat.h"
#include "unwinder.h"

#include <sys/mman.h>

#include "ehtrim.h"
#include "runtime_core.h"

/* Resident bytes of [p, p + len) (page-aligned), by mincore in steps. */
static size_t resident_bytes(void *p, size_t len, size_t page)
{
	unsigned char vec[1024];
	size_t res = 0;
	for (size_t off = 0; off < len; off += sizeof vec * page) {
		size_t n = len - off < sizeof vec * page ? len - off : sizeof vec * page;
		if (mincore((char *)p + off, n, vec) != 0)
			return 0;
		for (size_t i = 0; i < (n + page - 1) / page; i++)
			res += (vec[i] & 1) * page;
	}
	return res;
}

void rt_memory_report(void)
{
	region_stats st;
	region_get_stats(&rt_region, &st);
	unsigned sh = rt_region.page_shift;
	pthread_mutex_lock(&rt.a.lock);
	size_t arena_mapped = rt.a.mapped, arena_used = rt.a.in_use;
	pthread_mutex_unlock(&rt.a.lock);
	size_t set_bytes = set_mapped_bytes(&rt_set);
	table_totals tot;
	table_totals_get(&rt.table, &tot);
	uint64_t lookups, trims, trim_kib;
	ehtrim_stats(&lookups, &trims, &trim_kib);
	unwind_cache_info uc;
	unwind_cache_stats(&uc);
	size_t slots_res = st.slots_bytes
				   ? resident_bytes(rt_region.slots, st.slots_bytes, rt_region.page)
				   : 0;
	rt_log("memory: range_peak_kib=%zu live_kib=%zu cache_peak_kib=%zu "
	       "cache_kib=%zu cache_limit_kib=%zu side_table_kib=%zu side_table_res_kib=%zu "
	       "arena_kib=%zu arena_used_kib=%zu set_kib=%zu warm=%llu cold=%llu "
	       "fresh=%llu madvise=%llu mprotect=%llu mincore=%llu samples=%llu usable_by=%s "
	       "unwind_rules=%zu/%zu unwind_fp_verdicts=%zu/%zu "
	       "unwind_lookups=%llu unwind_trims=%llu unwind_trim_kib=%llu",
	       (st.peak_resident << sh) >> 10, (st.committed << sh) >> 10,
	       (st.peak_cache << sh) >> 10, ((st.cached + st.slack) << sh) >> 10,
	       (st.limit << sh) >> 10, st.slots_bytes >> 10, slots_res >> 10, arena_mapped >> 10,
	       arena_used >> 10, set_bytes >> 10, (unsigned long long)st.warm_allocs,
	       (unsigned long long)st.cold_allocs, (unsigned long long)st.fresh_allocs,
	       (unsigned long long)st.madvise_calls, (unsigned long long)st.mprotect_calls,
	       (unsigned long long)st.mincore_calls, (unsigned long long)tot.samples,
	       rt_underlying_usable_way(), uc.rules_used, 2 * uc.rules_sets, uc.fp_used,
	       2 * uc.fp_sets, (unsigned long long)lookups, (unsigned long long)trims,
	       (unsigned long long)trim_kib);
}
