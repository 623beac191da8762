/*
 * http_runtime.c: the HTTP endpoint attached to the runtime's globals
 * (http_runtime.h): its stack table, arena, period and dump lock, and the
 * profiler's own costs for /metrics.
 *
 * The server thread sets its reentrancy guard for its whole life, as the
 * dumper thread does: whatever libc or zlib allocates there goes straight
 * to the real allocator, unsampled, and can never recurse into the runtime.
 */
#include "http_runtime.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dump.h"
#include "runtime_core.h"

static http_server *server;
/* Set in a fork child that should start its own server (see .h). */
static atomic_bool child_restart;

static void server_thread_init(void)
{
	rt_tls.guard = 1;
}

static void runtime_cost(void *ctx, metrics_cost *out)
{
	(void)ctx;
	/* The runtime times its unwinding while the endpoint is on. */
	out->have_unwind = true;
	out->unwind_ns = atomic_load_explicit(&rt_unwind_ns, memory_order_relaxed);
	/* The sampled set maps its tables outside the arena: a key and a
	 * record per slot. The region's side table is touched at most up to
	 * its bump pointer (an upper bound, read without its lock). */
	out->extra_memory = (uint64_t)set_capacity(&rt_set) *
			    (sizeof(uintptr_t) + sizeof(sample_rec)) +
			    (uint64_t)__atomic_load_n(&rt_region.bump, __ATOMIC_RELAXED) *
			    sizeof(region_slot);
}

void http_runtime_start(const http_listen *l, const char *portfile, bool verbose)
{
	if (!l->enabled || server)
		return;
	http_source src = { .table = &rt.table,
			    .a = &rt.a,
			    .period = rt.opt.rate,
			    .start_realtime_ns = rt.start_realtime_ns,
			    .dump_lock = &rt.dump_lock,
			    .with_mappings = true,
			    .cost = runtime_cost,
			    .thread_init = server_thread_init };
	char err[256];
	char where[80];
	http_listen_format(l, l->port, where, sizeof where);
	if (http_server_start(l, &src, &server, err, sizeof err) != 0) {
		rt_log("http=%s: %s; the endpoint is off", where, err);
		server = NULL;
		return;
	}
	http_listen_format(l, http_server_port(server), where, sizeof where);
	if (l->port == 0 || verbose)
		rt_log("serving on %s", where);
	char path[RT_PATH_CAP];
	if (portfile && portfile[0]) {
		if (rt_expand_pattern(portfile, rt.pid, (uint64_t)time(NULL), 0, false,
				      path, sizeof path) != 0) {
			rt_log("http_portfile '%s' expands to a name that is too long",
			       portfile);
			return;
		}
		char line[96];
		int k = snprintf(line, sizeof line, "%s\n", where);
		dump_write_atomic(path, line, (size_t)k);
	}
}

void http_runtime_stop(void)
{
	http_server *s = server;
	server = NULL;
	http_server_stop(s);
}

void http_runtime_atfork_child(void)
{
	http_server_forget(server);
	server = NULL;
	atomic_store(&child_restart, rt.opt.fork_mode == RT_FORK_FOLLOW &&
					     rt.opt.http.enabled && rt.opt.http.port == 0);
}

void http_runtime_after_sample(void)
{
	if (AP_LIKELY(!atomic_load_explicit(&child_restart, memory_order_relaxed)))
		return;
	if (!atomic_exchange(&child_restart, false))
		return; /* another thread of the child got here first */
	/* A port file without %p is the parent's: leave it alone. */
	const char *pf = strstr(rt.opt.http_portfile, "%p") ? rt.opt.http_portfile : "";
	http_runtime_start(&rt.opt.http, pf, rt.opt.verbose);
}
