/*
 * control.c: sampling on and off at run time (control.h).
 */
#include "control.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "allocprof/options.h"
#include "unwinder.h"

/* rt.hot.rate_gen and rt.hot.active_rate (0: off) are this file's.
 * published_rate is rt.hot.active_rate once every listed thread has been
 * sent to its slow path: what ap_runtime_get_totals reports, so a thread
 * that sees sampling on has its own counter re-armed already. */
static _Atomic uint64_t published_rate;
static atomic_bool ever_on;
static atomic_bool start_req; /* start_on= signal received */

/* The registry: listed threads, linked through rt_thread.reg_next/prev. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_thread *reg_head;
static pthread_key_t reg_key;
static bool reg_ok;
/* Serialises start and stop (HTTP, dumper, attach). */
static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;

static void unlink_locked(rt_thread *t)
{
	if (t->reg_prev)
		t->reg_prev->reg_next = t->reg_next;
	else if (reg_head == t)
		reg_head = t->reg_next;
	if (t->reg_next)
		t->reg_next->reg_prev = t->reg_prev;
	t->reg_next = t->reg_prev = NULL;
	t->listed = false;
}

/* Key destructor: the thread is exiting, its TLS will be gone soon. */
static void thread_gone(void *v)
{
	rt_thread *t = v;
	uint64_t m = rt_enter();
	pthread_mutex_lock(&reg_lock);
	if (t->listed)
		unlink_locked(t);
	pthread_mutex_unlock(&reg_lock);
	unwind_thread_exit();
	rt_leave(m);
}

static void on_start_signal(int sig)
{
	(void)sig;
	int e = errno;
	atomic_store(&start_req, true);
	dumper_wake();
	errno = e;
}

int control_init(void)
{
	reg_ok = pthread_key_create(&reg_key, thread_gone) == 0;
	if (rt.opt.rate == 0 || rt.opt.start_on) {
		/* dormant; start_on= starts at rate= (the default after off) */
		if (rt.opt.rate == 0)
			rt.opt.rate = AP_SAMPLER_DEFAULT_RATE;
		atomic_store(&rt.hot.active_rate, 0);
	} else {
		atomic_store(&rt.hot.active_rate, rt.opt.rate);
		atomic_store(&published_rate, rt.opt.rate);
		atomic_store(&ever_on, true);
	}
	if (rt.opt.start_on)
		dumper_install_handler(rt.opt.start_on, on_start_signal, "the start_on");
	if (!reg_ok && !atomic_load(&rt.hot.active_rate)) {
		rt_log("no thread registry (pthread_key_create failed): "
		       "rate=off cannot be turned on");
		return AP_ENOMEM;
	}
	return 0;
}

bool control_on(void)
{
	return atomic_load_explicit(&rt.hot.active_rate, memory_order_relaxed) != 0;
}

bool control_ever_on(void)
{
	return atomic_load(&ever_on);
}

uint64_t control_rate(void)
{
	return atomic_load(&published_rate);
}

bool control_sync(rt_thread *t)
{
	t->gen = atomic_load(&rt.hot.rate_gen);
	uint64_t r = atomic_load(&rt.hot.active_rate);
	if (!r) {
		t->sampler.bytes_until_sample = (int64_t)AP_SAMPLER_GAP_MAX;
		return false;
	}
	if (t->sampler.rate != r && ap_sampler_set_rate(&t->sampler, r) != 0) {
		t->sampler.bytes_until_sample = (int64_t)AP_SAMPLER_GAP_MAX;
		return false;
	}
	ap_sampler_redraw(&t->sampler);
	return true;
}

void control_thread_added(rt_thread *t)
{
	if (reg_ok && !t->listed) {
		pthread_mutex_lock(&reg_lock);
		t->reg_prev = NULL;
		t->reg_next = reg_head;
		if (reg_head)
			reg_head->reg_prev = t;
		reg_head = t;
		t->listed = true;
		pthread_mutex_unlock(&reg_lock);
		(void)pthread_setspecific(reg_key, t);
	}
	/* Read after listing: a change made before we were listed is seen
	 * here, one made after finds us in the list. */
	t->gen = atomic_load(&rt.hot.rate_gen);
	if (!atomic_load(&rt.hot.active_rate))
		t->sampler.bytes_until_sample = (int64_t)AP_SAMPLER_GAP_MAX;
}

/* Send every listed thread still on another generation to its slow path.
 * all: every such thread; else only those whose counter is not 0 (a
 * store of ours lost to an allocation in flight). */
static void poke(bool all)
{
	uint32_t g = atomic_load(&rt.hot.rate_gen);
	pthread_mutex_lock(&reg_lock);
	for (rt_thread *t = reg_head; t; t = t->reg_next) {
		if (__atomic_load_n(&t->gen, __ATOMIC_RELAXED) == g)
			continue;
		if (all || __atomic_load_n(&t->sampler.bytes_until_sample,
					   __ATOMIC_RELAXED) != 0)
			__atomic_store_n(&t->sampler.bytes_until_sample, 0,
					 __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&reg_lock);
}

static void change(uint64_t r)
{
	atomic_store(&rt.hot.active_rate, r);
	atomic_fetch_add(&rt.hot.rate_gen, 1);
	poke(true);
	atomic_store(&published_rate, r);
	struct timespec ms = { 0, 1000000 };
	for (int i = 0; i < CONTROL_REPOKE; i++) {
		nanosleep(&ms, NULL);
		poke(false);
	}
}

int control_start(uint64_t rate)
{
	if (atomic_load(&rt.state) != RT_READY || !reg_ok)
		return AP_EUNSUPPORTED;
	if (rate > AP_SAMPLER_RATE_MAX)
		return AP_ERANGE;
	uint64_t m = rt_enter();
	pthread_mutex_lock(&change_lock);
	if (rate)
		__atomic_store_n(&rt.opt.rate, rate, __ATOMIC_RELAXED);
	atomic_store(&ever_on, true);
	change(rt.opt.rate);
	pthread_mutex_unlock(&change_lock);
	rt_leave(m);
	if (rt.opt.verbose)
		rt_log("sampling on: rate=%llu", (unsigned long long)rt.opt.rate);
	return 0;
}

int control_stop(void)
{
	if (atomic_load(&rt.state) != RT_READY || !reg_ok)
		return AP_EUNSUPPORTED;
	uint64_t m = rt_enter();
	pthread_mutex_lock(&change_lock);
	change(0);
	pthread_mutex_unlock(&change_lock);
	rt_leave(m);
	if (rt.opt.verbose)
		rt_log("sampling off");
	return 0;
}

void control_poll(void)
{
	if (atomic_exchange(&start_req, false) && !control_on())
		(void)control_start(0);
}

bool control_needs_dumper(void)
{
	return rt.opt.start_on != 0;
}

void control_atfork_child(void)
{
	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_init(&change_lock, NULL);
	rt_thread *self = &rt_tls;
	bool listed = self->listed;
	reg_head = NULL;
	self->reg_next = self->reg_prev = NULL;
	if (listed)
		reg_head = self;
}

int control_http(bool start, const char *query, size_t qlen, char *msg, size_t cap)
{
	uint64_t rate = 0;
	if (!start && qlen) {
		snprintf(msg, cap, "stop takes no parameters\n");
		return 400;
	}
	if (start && control_parse_query(query, qlen, &rate) != 0) {
		snprintf(msg, cap, "bad query: expected rate=N (bytes, 1 to 2^52, "
			 "K/M/G suffixes allowed)\n");
		return 400;
	}
	int rc = start ? control_start(rate) : control_stop();
	if (rc != 0) {
		snprintf(msg, cap, "cannot %s sampling: %s\n", start ? "start" : "stop",
			 ap_strerror(rc));
		return 503;
	}
	if (start)
		snprintf(msg, cap, "sampling on, rate=%llu\n",
			 (unsigned long long)rt.opt.rate);
	else
		snprintf(msg, cap, "sampling off\n");
	return 200;
}
