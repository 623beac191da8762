/*
 * push.c: push=URL (push.h).
 */
#include "push.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime_core.h"

typedef struct push_job {
	unsigned char *buf; /* arena_map'd, cap bytes */
	size_t len, cap;
	uint64_t start_ns, end_ns;
} push_job;

static bool enabled;
static char name[PUSH_NAME_CAP];
static uint64_t next_push; /* monotonic ns; dumper thread only */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;   /* a job is pending, or the state changed */
static push_job pending;
static bool busy;             /* the thread is sending a job */
static long started_pid;
static pthread_t sender;      /* the thread, when started_pid is this process */
static bool stop_req;         /* push_stop: the thread returns */
static _Atomic long sender_tid;
/* Consecutive failed profiles: written by the sending thread, read at exit. */
static _Atomic uint64_t failures;

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void init_cond(void)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &ca);
	pthread_condattr_destroy(&ca);
}

void push_configure(void)
{
	const rt_push_url *u = &rt.opt.push;
	if (!u->to.enabled)
		return;
	if (!rt.opt.push_public && !http_listen_is_loopback(&u->to)) {
		rt_log("push=: not a loopback address, and profiles show heap "
		       "addresses and symbol names to the network in plain http; "
		       "set push_public=1 to send them anyway (push is off)");
		return;
	}
	if (rt.opt.format != RT_FORMAT_PPROF) {
		rt_log("push=: only pprof profiles are pushed (format=heap_v2 "
		       "given; push is off)");
		return;
	}
	if (rt.opt.push_name[0])
		snprintf(name, sizeof name, "%s", rt.opt.push_name);
	else
		snprintf(name, sizeof name, "allocprof.%s", program_invocation_short_name);
	init_cond();
	enabled = true;
}

bool push_enabled(void)
{
	return enabled;
}

uint64_t push_next(void)
{
	if (!enabled || !rt.opt.push_interval_ns)
		return 0;
	if (!next_push)
		next_push = now_ns(CLOCK_MONOTONIC) + rt.opt.push_interval_ns;
	return next_push;
}

bool push_due(uint64_t now)
{
	if (!push_next() || now < next_push)
		return false;
	next_push = now + rt.opt.push_interval_ns;
	return true;
}

/* ---- the request --------------------------------------------------------- */

/* ---- sending ------------------------------------------------------------- */

/* Wait for ev on fd until the monotonic deadline; false on timeout/error. */
static bool wait_fd(int fd, short ev, uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		if (now >= deadline)
			return false;
		struct pollfd p = { fd, ev, 0 };
		int ms = (int)((deadline - now + 999999) / 1000000);
		int r = poll(&p, 1, ms);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
	}
}

static int connect_to(const http_listen *to)
{
	struct sockaddr_in6 a6;
	struct sockaddr_in a4;
	memset(&a6, 0, sizeof a6);
	memset(&a4, 0, sizeof a4);
	const struct sockaddr *sa;
	socklen_t sl;
	if (to->v6) {
		a6.sin6_family = AF_INET6;
		a6.sin6_port = htons(to->port);
		memcpy(&a6.sin6_addr, to->addr, 16);
		sa = (const struct sockaddr *)&a6;
		sl = sizeof a6;
	} else {
		a4.sin_family = AF_INET;
		a4.sin_port = htons(to->port);
		memcpy(&a4.sin_addr, to->addr, 4);
		sa = (const struct sockaddr *)&a4;
		sl = sizeof a4;
	}
	int fd = socket(to->v6 ? AF_INET6 : AF_INET,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, sa, sl) != 0) {
		int err = 0;
		socklen_t el = sizeof err;
		if (errno != EINPROGRESS ||
		    !wait_fd(fd, POLLOUT, now_ns(CLOCK_MONOTONIC) +
						  PUSH_CONNECT_MS * 1000000ULL) ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

static bool send_all(int fd, const void *p, size_t n, uint64_t deadline)
{
	const unsigned char *b = p;
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w > 0) {
			b += w;
			n -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			return false;
		} else if (!wait_fd(fd, POLLOUT, deadline)) {
			return false;
		}
	}
	return true;
}

/* One attempt: the status code, or -1 (no connection, timeout). */
static int attempt(const push_job *j)
{
	char head[2048];
	size_t hl;
	if (push_format_head(head, sizeof head, &hl, &rt.opt.push, name,
			     j->start_ns / 1000000000ULL, j->end_ns / 1000000000ULL,
			     j->len) != 0)
		return 400; /* cannot be sent: do not retry */
	int fd = connect_to(&rt.opt.push.to);
	if (fd < 0)
		return -1;
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) + PUSH_IO_MS * 1000000ULL;
	int status = -1;
	if (send_all(fd, head, hl, deadline) && send_all(fd, j->buf, j->len, deadline)) {
		char line[64];
		size_t got = 0;
		while (got < 12 && wait_fd(fd, POLLIN, deadline)) {
			ssize_t r = recv(fd, line + got, sizeof line - got, 0);
			if (r <= 0 && !(r < 0 && (errno == EAGAIN || errno == EINTR)))
				break;
			if (r > 0)
				got += (size_t)r;
		}
		status = push_parse_status(line, got);
	}
	close(fd);
	return status;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void deliver(const push_job *j)
{
	int status = -1;
	uint64_t backoff = PUSH_BACKOFF_MS;
	for (int i = 0; i < PUSH_ATTEMPTS; i++) {
		if (i) {
			sleep_ms(backoff);
			backoff *= 2;
		}
		status = attempt(j);
		if (status >= 200 && status < 500)
			break; /* delivered, or refused for good */
	}
	if (status >= 200 && status < 300) {
		uint64_t n = atomic_exchange(&failures, 0);
		if (n)
			rt_log("push: delivered again after %llu failed profiles",
			       (unsigned long long)n);
		return;
	}
	if (atomic_fetch_add(&failures, 1) == 0) {
		if (status < 0)
			rt_log("push: could not deliver a profile (no answer within "
			       "the timeouts, %d attempts); further failures are "
			       "counted, not printed", PUSH_ATTEMPTS);
		else
			rt_log("push: the receiver answered %d; further failures "
			       "are counted, not printed", status);
	}
}

static void *push_main(void *arg)
{
	(void)arg;
	rt_tls.guard = 1; /* for the thread's whole life */
	atomic_store(&sender_tid, (long)syscall(SYS_gettid));
	rt_helper_started();
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!pending.buf && !stop_req)
			pthread_cond_wait(&cond, &lock);
		if (stop_req) {
			/* A pending profile waits for the next thread. */
			pthread_mutex_unlock(&lock);
			break;
		}
		push_job j = pending;
		memset(&pending, 0, sizeof pending);
		busy = true;
		pthread_mutex_unlock(&lock);
		deliver(&j);
		arena_unmap(j.buf, j.cap);
		pthread_mutex_lock(&lock);
		busy = false;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
	rt_helper_ending();
	return NULL;
}

void push_start(void)
{
	if (!enabled)
		return;
	pthread_mutex_lock(&lock);
	if (started_pid != rt.pid) {
		/* Joinable, for push_stop; at exit it is simply left. */
		stop_req = false;
		if (pthread_create(&sender, NULL, push_main, NULL) == 0)
			started_pid = rt.pid;
		else
			rt_log("push: cannot start the sending thread: push is off");
	}
	pthread_mutex_unlock(&lock);
}

void push_enqueue(const void *body, size_t len, uint64_t start_ns, uint64_t end_ns)
{
	if (!enabled || !len)
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t cap = (len + page - 1) / page * page;
	unsigned char *copy = arena_map(cap);
	if (!copy)
		return;
	memcpy(copy, body, len);
	push_job old;
	pthread_mutex_lock(&lock);
	old = pending;
	pending = (push_job){ copy, len, cap, start_ns, end_ns };
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	if (old.buf) /* not sent yet: the newer profile includes it */
		arena_unmap(old.buf, old.cap);
}

long push_stop(void)
{
	pthread_mutex_lock(&lock);
	if (started_pid != rt.pid) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	stop_req = true;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	/* Waits for a delivery under way, bounded by push's own timeouts. */
	pthread_join(sender, NULL);
	pthread_mutex_lock(&lock);
	started_pid = 0;
	stop_req = false;
	pthread_mutex_unlock(&lock);
	return atomic_load(&sender_tid);
}

void push_at_exit(void)
{
	if (!enabled)
		return;
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) + PUSH_EXIT_WAIT_MS * 1000000ULL;
	struct timespec ts = { (time_t)(deadline / 1000000000ULL),
			       (long)(deadline % 1000000000ULL) };
	pthread_mutex_lock(&lock);
	if (started_pid != rt.pid || atomic_load(&failures)) {
		/* no thread here to send it, or the receiver has been failing:
		 * waiting would only delay the exit */
		pthread_mutex_unlock(&lock);
		return;
	}
	while ((pending.buf || busy) &&
	       pthread_cond_timedwait(&cond, &lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&lock);
}

void push_atfork_child(void)
{
	/* The sending thread is the parent's; so is a pending profile. */
	pthread_mutex_init(&lock, NULL);
	if (enabled)
		init_cond();
	if (pending.buf)
		arena_unmap(pending.buf, pending.cap);
	memset(&pending, 0, sizeof pending);
	busy = false;
	stop_req = false;
	next_push = 0;
}
