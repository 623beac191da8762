/*
 * detect.h: noticing that the runtime cannot see the program's allocations,
 * so an empty profile never goes out without a word.
 *
 * Two ways to be blind: the program's malloc resolves to something other
 * than the runtime's (another allocator earlier in LD_PRELOAD, or an
 * allocator linked into the executable, which the dynamic linker searches
 * first), checked at initialisation with dlsym(RTLD_DEFAULT, "malloc"); or
 * no sample was ever recorded while the process's anonymous resident
 * memory (RssAnon) grew by max(DETECT_GROWTH, 64 x rate) bytes or more (an allocator the executable
 * keeps to itself), checked at each dump. Either way one line goes to stderr, once
 * per process, and every profile carries it as the comment
 * "allocprof.warning=...".
 */
#ifndef AP_PRELOAD_DETECT_H
#define AP_PRELOAD_DETECT_H

#include <stdbool.h>
#include <stdint.h>

/* Growth of anonymous resident memory, with no sample recorded, that counts as blindness:
 * more than any libc start-up or the runtime's own tables need. */
#define DETECT_GROWTH ((uint64_t)16 << 20)

/* At initialisation (guard set): where malloc resolves; the baseline of
 * anonymous resident memory. */
void detect_init(void);
/* Since detect_init: does the program's malloc resolve to another
 * object's, so that no malloc call reaches the runtime? */
bool detect_malloc_elsewhere(void);
/* At initialisation: one line on stderr when the program is written in Go
 * and the exit dump is the only one asked for. Go's runtime ends the
 * process with the exit_group system call, never through libc's exit, so
 * the runtime's exit dump (an atexit handler) does not run. */
void detect_go_exit(void);
/* Before a dump: the warning for the profile, or NULL when none applies.
 * Prints it on stderr the first time. */
const char *detect_warning(void);

#endif
