/*
 * memstat.h: the runtime's report of its own memory (memstat.c).
 */
#ifndef AP_PRELOAD_MEMSTAT_H
#define AP_PRELOAD_MEMSTAT_H

/* One "memory: key=value ..." line on stderr: the region's peak and cache,
 * its side table, the arena, the sampled set, and the region's counters of
 * warm/cold/fresh runs and system calls. Inside the runtime (guard set). */
void rt_memory_report(void);

#endif
