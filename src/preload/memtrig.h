/*
 * memtrig.h: dumps before an out-of-memory kill (rss_limit=, psi_limit=).
 *
 * The dumper thread checks, every MEMTRIG_PERIOD_NS, the resident set
 * (one read of /proc/self/statm) against rss_limit and the memory
 * pressure ("some avg10" of the cgroup's memory.pressure, else
 * /proc/pressure/memory) against psi_limit. A crossing asks for one dump,
 * marked with the trigger's name (extension "trigger"); the trigger
 * re-arms only after the value has gone back below MEMTRIG_REARM_PCT
 * percent of the limit, so a process hovering at the limit writes one
 * profile, not one per check. rss_limit=N% is N percent of the memory
 * cgroup's limit, read at start; without a limit the option is refused
 * with one line.
 */
#ifndef AP_PRELOAD_MEMTRIG_H
#define AP_PRELOAD_MEMTRIG_H

#include <stdbool.h>
#include <stdint.h>

#define MEMTRIG_PERIOD_NS 100000000ULL /* 100 ms */
#define MEMTRIG_REARM_PCT 90

/* At initialisation: resolve rss_limit=N% (one line when impossible). */
void memtrig_configure(void);
/* Whether either trigger is on (the dumper thread must run). */
bool memtrig_enabled(void);
/* Monotonic time of the next check (0 when off). */
uint64_t memtrig_next(void);
/* At or after memtrig_next: check; the trigger's name when a dump is due,
 * else NULL. Dumper thread only. */
const char *memtrig_check(uint64_t now_ns);
/* After fork in the child: the parent's crossing state is not ours. */
void memtrig_atfork_child(void);

/* Pure state machine (tests): value v against limit, armed flag updated;
 * true when v crosses the limit while armed. */
bool memtrig_step(uint64_t v, uint64_t limit, bool *armed);

#endif
