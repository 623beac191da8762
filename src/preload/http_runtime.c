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

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "control.h"
#include "runtime_core.h"
#include "tlring.h"

static http_server *server;
/* The port file this process wrote, removed when its endpoint stops. */
static char portfile_written[RT_PATH_CAP];
static char portfile_line[96];
/* rt.hot.http_child_restart: set in a fork child that should start its
 * own server (see .h). */

static void server_thread_init(void)
{
	rt_tls.guard = 1;
	rt_helper_started();
}

static void server_thread_exit(void)
{
	rt_helper_ending();
}

static void runtime_cost(void *ctx, metrics_cost *out)
{
	(void)ctx;
	/* The runtime times its unwinding while the endpoint is on. */
	out->have_unwind = true;
	out->unwind_ns = atomic_load_explicit(&rt_unwind_ns, memory_order_relaxed);
	/* The sampled set maps its tables outside the arena. The region's
	 * side table is touched at most up to its bump pointer (an upper
	 * bound, read without its lock). */
	out->extra_memory = set_mapped_bytes(&rt_set) +
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
			    .thread_init = server_thread_init,
			    .thread_exit = server_thread_exit,
			    .control = control_http,
			    .timeline = series_timeline_blob };
	char err[256];
	char where[80];
	http_listen_format(l, l->port, where, sizeof where);
	if (!rt.opt.http_public && !http_listen_is_loopback(l)) {
		rt_log("http=%s: not a loopback address, and the endpoint shows heap "
		       "addresses and symbols to anyone who connects; add "
		       "http_public=1 to serve it; the endpoint is off", where);
		return;
	}
	if (http_server_start(l, &src, &server, err, sizeof err) != 0) {
		rt_log("http=%s: %s; the endpoint is off", where, err);
		server = NULL;
		return;
	}
	http_listen_format(l, http_server_port(server), where, sizeof where);
	/* A fork child announces itself only through its own port file. */
	if ((l->port == 0 && !rt.forked_child) || verbose)
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
		if (dump_write_named("port file", path, line, (size_t)k) == 0) {
			memcpy(portfile_written, path, sizeof path);
			memcpy(portfile_line, line, sizeof line);
		}
	}
}

bool http_runtime_running(void)
{
	return server != NULL;
}

long http_runtime_stop(void)
{
	http_server *s = server;
	server = NULL;
	long tid = http_server_stop(s);
	/* The address is stale once the endpoint is gone; a file that no
	 * longer holds it is another process's now. */
	if (s && portfile_written[0]) {
		char now[sizeof portfile_line];
		int fd = open(portfile_written, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, now, sizeof now - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n >= 0 && (size_t)n == strlen(portfile_line) &&
		    memcmp(now, portfile_line, (size_t)n) == 0)
			unlink(portfile_written);
		portfile_written[0] = '\0';
	}
	return tid;
}

void http_runtime_atfork_child(void)
{
	http_server_forget(server);
	server = NULL;
	portfile_written[0] = '\0'; /* the parent's, not ours to remove */
	/* Only a child that can be found (its own port file, named by %p)
	 * serves: one nobody can reach would only cost a thread and a port. */
	atomic_store(&rt.hot.http_child_restart, rt.opt.fork_mode == RT_FORK_FOLLOW &&
					     rt.opt.http.enabled && rt.opt.http.port == 0 &&
					     strstr(rt.opt.http_portfile, "%p") != NULL);
}

void http_runtime_after_sample(void)
{
	if (AP_LIKELY(!atomic_load_explicit(&rt.hot.http_child_restart, memory_order_relaxed)))
		return;
	if (!atomic_exchange(&rt.hot.http_child_restart, false))
		return; /* another thread of the child got here first */
	http_runtime_start(&rt.opt.http, rt.opt.http_portfile, rt.opt.verbose);
}
