/*
 * memtrig.c: rss_limit= and psi_limit= (memtrig.h).
 */
#include "memtrig.h"

#include "procmem.h"
#include "runtime_core.h"

static uint64_t rss_limit;  /* bytes; 0 = off */
static uint64_t next_check; /* monotonic ns; 0 = not scheduled yet */
static bool rss_armed = true, psi_armed = true;

void memtrig_configure(void)
{
	const rt_limit *l = &rt.opt.rss_limit;
	rss_limit = l->bytes;
	if (!l->percent)
		return;
	uint64_t usage, limit = 0;
	if (!procmem_cgroup(&usage, &limit) || limit == 0) {
		rt_log("rss_limit=%u%%: this process has no memory cgroup limit to "
		       "take a percentage of (ignored; give bytes instead)",
		       (unsigned)l->percent);
		return;
	}
	rss_limit = limit / 100 * l->percent;
	if (rt.opt.verbose)
		rt_log("rss_limit=%u%% of the cgroup's %llu bytes: %llu bytes",
		       (unsigned)l->percent, (unsigned long long)limit,
		       (unsigned long long)rss_limit);
}

bool memtrig_enabled(void)
{
	return rss_limit || rt.opt.psi_limit;
}

uint64_t memtrig_next(void)
{
	if (!memtrig_enabled())
		return 0;
	return next_check ? next_check : 1;
}

const char *memtrig_check(uint64_t now)
{
	if (!memtrig_enabled() || now < next_check)
		return NULL;
	next_check = now + MEMTRIG_PERIOD_NS;
	const char *why = NULL;
	uint64_t rss;
	if (rss_limit && procmem_rss(&rss) && memtrig_step(rss, rss_limit, &rss_armed))
		why = "rss_limit";
	uint32_t centi;
	if (rt.opt.psi_limit && procmem_psi(&centi) &&
	    memtrig_step(centi, rt.opt.psi_limit * 100, &psi_armed) && !why)
		why = "psi_limit";
	return why;
}

void memtrig_atfork_child(void)
{
	next_check = 0;
	rss_armed = psi_armed = true;
}
