/*
 * control.h: sampling turned on and off while the program runs.
 *
 * A runtime started with rate=off is dormant: each thread's sampler counter
 * sits at AP_SAMPLER_GAP_MAX, so the fast paths never branch to the slow
 * path and the runtime costs what an unsampled call costs (a subtraction
 * and a branch). Sampling starts on the signal named by start_on=, a POST
 * to /debug/allocprof/start (http.c), or `allocprof attach`
 * (ap_runtime_attach, attach.c), and stops on /debug/allocprof/stop or
 * `allocprof detach`.
 *
 * How the threads learn of it. A thread only reads the process-wide state
 * on its slow path, which a dormant thread never takes. So the runtime
 * keeps a registry of the threads that have a sampler (linked through
 * their rt_thread, added at the thread's first slow path, removed by a
 * pthread key destructor before the thread's TLS goes away) and, on a
 * change, bumps a generation and sets each listed thread's counter to 0
 * under the registry's lock: the thread's next allocation takes the slow
 * path, sees the new generation and takes the new rate (or goes back to
 * GAP_MAX when off). The owner updates its counter without an atomic
 * read-modify-write, so a store can be lost to an allocation in flight;
 * the changer therefore looks again (CONTROL_REPOKE rounds, 1 ms apart)
 * and re-arms any thread still on the old generation whose counter is not
 * 0. Threads that never allocated have a counter of 0 already.
 */
#ifndef AP_PRELOAD_CONTROL_H
#define AP_PRELOAD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime_core.h"

#define CONTROL_REPOKE 3

/* The generation of the sampling state is rt.hot.rate_gen; a thread whose
 * rt_thread.gen differs must call control_sync. */

/* At initialisation (guard set, options parsed): rate=off (rt.opt.rate 0)
 * makes the runtime dormant, to start at the default rate; start_on=SIG
 * makes it dormant until SIG, to start at rate=. 0, or AP_ENOMEM when no thread registry could be made (then
 * rate=off runs dormant forever). */
int control_init(void);
/* thread_init of t (guard set): list t and give it the current state. */
void control_thread_added(rt_thread *t);
/* Slow path of a listed thread on another generation, or while off:
 * bring t's sampler up to date; false when sampling is off. */
bool control_sync(rt_thread *t);
/* Is sampling on? (One relaxed load.) */
bool control_on(void);
/* Has sampling ever been on in this process? (No profile at exit if not.) */
bool control_ever_on(void);
/* The rate in force, 0 when off; set after every listed thread was re-armed. */
uint64_t control_rate(void);
/* Turn sampling on at rate (0: the configured rate) or off. Not from a
 * signal handler. 0, AP_ERANGE (rate above AP_SAMPLER_RATE_MAX),
 * AP_EUNSUPPORTED (runtime inactive). */
int control_start(uint64_t rate);
int control_stop(void);
/* The dumper thread's turn: act on a start_on signal received. */
void control_poll(void);
/* Whether the dumper thread is needed for start_on=. */
bool control_needs_dumper(void);
/* Fork child: the registry holds the calling thread only. */
void control_atfork_child(void);

/*
 * The HTTP endpoint's /debug/allocprof/start and /stop (http.h's control
 * hook): query "" or "rate=N" (N as rate=, K/M/G suffixes); returns the
 * HTTP status and a one-line message in msg.
 */
int control_http(bool start, const char *query, size_t qlen, char *msg, size_t cap);
/* Parse such a query: 0 and *rate (0 when absent), or AP_EINVAL. */
int control_parse_query(const char *q, size_t n, uint64_t *rate);

#endif
