/*
 * hist_tls.c: the per-thread recorders behind the shared ap_hist_add (the
 * idea of BIND's "histomulti": one shard per thread, merged when read).
 *
 * A thread that calls ap_hist_add(h, ...) is given a recorder of h (a
 * released one is reused, else a new one) and finds it again through a
 * small direct-mapped cache of its own, indexed and tagged by h's id
 * (hist_internal.h). The record is then the recorder's single-writer path:
 * no atomic read-modify-write, nothing shared with other threads on the
 * hot path. Snapshots already merge every recorder, so they stay exact.
 *
 * What can outlive what is the hard part, and the reason for a registry:
 * a thread's cache may name a histogram that was destroyed meanwhile (ids
 * are never reused, so the stale slot never matches again, but its recorder
 * pointer dangles), and a histogram may be destroyed while threads that
 * once recorded into it are still alive. A binding is only ever released
 * (at thread exit, or when another histogram takes its slot) under
 * reg_lock and only if its histogram is still registered; ap_hist_destroy
 * unregisters under the same lock before freeing anything. So a release
 * never touches freed memory, and no thread is ever walked by another.
 * The lock is taken on binding, eviction, thread exit and destroy only,
 * never on the record path.
 *
 * Thread exit: a pthread key destructor releases the thread's recorders
 * (their counts stay in their histograms, and the next thread to bind
 * reuses them), so the number of recorders of a histogram is bounded by
 * the most threads that recorded into it at the same time, not by how
 * many threads ever did.
 */
#include <pthread.h>
#include <stdlib.h>

#include "hist_internal.h"

struct hist_tls apx_hist_tls_none;
__thread struct hist_tls *apx_hist_tls
	__attribute__((tls_model("initial-exec"), visibility("hidden"))) =
		&apx_hist_tls_none;

static _Atomic uint64_t next_id = 1;

uint64_t apx_hist_new_id(void)
{
	return atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
}

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static ap_hist *reg_head; /* registered histograms, under reg_lock */

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool key_ok;

/* Under reg_lock: is the histogram with this id still alive? */
static bool reg_alive(uint64_t id)
{
	for (const ap_hist *h = reg_head; h; h = h->reg_next)
		if (h->id == id)
			return true;
	return false;
}

/* Under reg_lock: end the slot's binding (its recorder stays in its
 * histogram with all its counts, free for the next thread). */
static void slot_release(struct hist_tls_slot *sl)
{
	if (sl->id && reg_alive(sl->id))
		ap_hist_recorder_release(sl->r);
	sl->id = 0;
	sl->r = NULL;
}

/* Thread exit (pthread key destructor): release every binding. */
static void tls_exit(void *p)
{
	struct hist_tls *t = p;
	pthread_mutex_lock(&reg_lock);
	for (unsigned i = 0; i < HIST_TLS_SLOTS; i++)
		slot_release(&t->slot[i]);
	pthread_mutex_unlock(&reg_lock);
	apx_hist_tls = &apx_hist_tls_none;
	free(t);
}

/* fork: the child must not inherit reg_lock held by a thread it does not
 * have; holding it across fork gives the child a consistent registry. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

static void fork_child(void)
{
	pthread_mutex_init(&reg_lock, NULL);
}

static void key_init(void)
{
	key_ok = pthread_key_create(&key, tls_exit) == 0 &&
		 pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
}

/* The calling thread's cache, made on first use; NULL if it cannot be. */
static struct hist_tls *tls_get(void)
{
	struct hist_tls *t = apx_hist_tls;
	if (t != &apx_hist_tls_none)
		return t;
	pthread_once(&key_once, key_init);
	if (!key_ok || !(t = calloc(1, sizeof *t)))
		return NULL;
	if (pthread_setspecific(key, t) != 0) {
		free(t);
		return NULL;
	}
	return apx_hist_tls = t;
}

ap_hist_recorder *apx_hist_tls_bind(ap_hist *h)
{
	struct hist_tls *t = tls_get();
	if (!t)
		return NULL;
	struct hist_tls_slot *sl = (struct hist_tls_slot *)(void *)((char *)t +
								      h->tls_off);
	if (sl->id == h->id)
		return sl->r;
	ap_hist_recorder *r;
	if (ap_hist_recorder_get(h, &r) != 0)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	slot_release(sl);
	if (!atomic_load_explicit(&h->registered, memory_order_relaxed)) {
		h->reg_prev = NULL;
		h->reg_next = reg_head;
		if (reg_head)
			reg_head->reg_prev = h;
		reg_head = h;
		atomic_store_explicit(&h->registered, true, memory_order_release);
	}
	pthread_mutex_unlock(&reg_lock);
	sl->id = h->id;
	sl->r = r;
	return r;
}

void apx_hist_tls_forget(ap_hist *h)
{
	/* Only a thread of this process that bound a recorder registered h,
	 * and destroy must not race with use of h, so a histogram that was
	 * never bound skips the lock (a destroy in a fork child then cannot
	 * meet a lock held by a thread that no longer exists there). */
	if (!atomic_load_explicit(&h->registered, memory_order_acquire))
		return;
	pthread_mutex_lock(&reg_lock);
	if (h->reg_prev)
		h->reg_prev->reg_next = h->reg_next;
	else
		reg_head = h->reg_next;
	if (h->reg_next)
		h->reg_next->reg_prev = h->reg_prev;
	atomic_store_explicit(&h->registered, false, memory_order_relaxed);
	pthread_mutex_unlock(&reg_lock);
}
