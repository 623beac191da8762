/*
 * http_runtime.h: the HTTP endpoint (http.h) wired to the running runtime:
 * started from the runtime's constructor when ALLOCPROF_OPTIONS has http=,
 * stopped in its destructor, dropped in fork children.
 *
 * Kept apart from http.c so that unit tests of the server link without the
 * runtime's global state (and its constructor).
 */
#ifndef AP_PRELOAD_HTTP_RUNTIME_H
#define AP_PRELOAD_HTTP_RUNTIME_H

#include <stdbool.h>

#include "http.h"

/*
 * Start serving on l (nothing when l is disabled; refused with one line
 * when l is not loopback and http_public is off). Prints
 * "allocprof: serving on ADDR:PORT" on stderr when the port was 0 (not in a
 * fork child) or verbose is set, and writes "ADDR:PORT\n" to portfile (a
 * name pattern as output=: %p pid, %t time; written atomically, mode 0600)
 * when portfile is non-empty; http_runtime_stop removes that file again if
 * it still holds this address. Failures print one line; the program runs
 * on without the endpoint. Call with the thread's guard set.
 */
void http_runtime_start(const http_listen *l, const char *portfile, bool verbose);
/* Stop the server (bounded wait); a no-op when none runs. */
/* Is the endpoint serving in this process? */
bool http_runtime_running(void);
long http_runtime_stop(void); /* the joined thread's id, or 0 */
/*
 * pthread_atfork child handler: the child does not serve the parent's
 * socket; the inherited descriptors are closed. A child that keeps
 * profiling (fork=follow) of a parent that asked for any free port
 * (http=0) gets its own endpoint when the port file's name has %p (it
 * could not be found otherwise), started by http_runtime_after_sample at
 * its first sample rather than here: creating a thread inside fork's child
 * handler is not safe.
 */
void http_runtime_atfork_child(void);
/* Called after each recorded sample (guard set): starts a fork child's own
 * endpoint when one is due. One relaxed load otherwise. */
void http_runtime_after_sample(void);

#endif
