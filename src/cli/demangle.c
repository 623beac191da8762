/*
 * demangle.c: libiberty's C++ and Rust demanglers behind one call (see
 * demangle.h).
 */
#define _GNU_SOURCE
#include "demangle.h"

#include <stdbool.h>

#include <libiberty/demangle.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "framename.h"

/*
 * A demangled name longer than this is given up. Back-references let a
 * short mangled name expand exponentially (80 bytes of Rust v0 became
 * more than 2 GiB under the fuzzer); the longest real names, deep C++
 * template instantiations, stay well below it.
 */
#define DM_MAX_LEN ((size_t)1 << 20)

/*
 * A name gets at most this much of the thread's CPU time. The length cap
 * above only works while the demangler prints: libiberty's Rust demangler
 * also walks parts of a name without printing them (the instantiating
 * crate after the path), and there a binder's lifetime count, a base-62
 * number, loops up to 2^64 times: a 131-byte name from the fuzzer ran for
 * hours, in c++filt too. Real names take microseconds.
 */
#define DM_CPU_BUDGET_NS 250000000L

/* What a demangler writes, piece by piece. */
struct dmbuf {
	char *s;
	size_t len, cap;
	sigjmp_buf stop; /* taken when the name is too long or memory runs out,
			  * or its CPU budget is spent */
};

/* The demangling under way (the timer's handler jumps back into it), and
 * while dm_append is growing its buffer (inside malloc, which must not be
 * left by a jump) the handler only marks the budget spent. */
static struct dmbuf *volatile dm_active;
static volatile sig_atomic_t dm_busy, dm_spent;

/*
 * libiberty's callback demanglers keep their state on the stack and
 * allocate nothing, so leaving one by longjmp from its callback, or from
 * the budget's signal, loses nothing: it is how a name that would not
 * end is cut short.
 */
static void dm_append(const char *piece, size_t n, void *opaque)
{
	struct dmbuf *b = opaque;
	dm_busy = 1;
	bool full = n > DM_MAX_LEN - b->len ||
		    ap_cli_grow((void **)&b->s, &b->cap, b->len + n + 1, 1);
	dm_busy = 0;
	if (full || dm_spent)
		siglongjmp(b->stop, 1);
	memcpy(b->s + b->len, piece, n);
	b->len += n;
	b->s[b->len] = 0;
}

static void dm_on_budget(int sig)
{
	(void)sig;
	struct dmbuf *b = dm_active;
	if (!b)
		return;
	if (dm_busy)
		dm_spent = 1; /* dm_append jumps once out of malloc */
	else
		siglongjmp(b->stop, 1);
}

/* glibc before 2.37 has the field but not this name for it. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* The budget's timer: the CPU clock of the thread that first demangles, a
 * real-time signal to that thread (dm_timer_tid). 1 once made, -1 when it
 * cannot be (then names go unbounded). */
static int dm_timer_state;
static timer_t dm_timer;
static pid_t dm_timer_tid;

static bool dm_timer_ready(void)
{
	if (dm_timer_state)
		return dm_timer_state > 0;
	dm_timer_state = -1;
	int sig = SIGRTMIN + 3;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = dm_on_budget;
	sa.sa_flags = SA_NODEFER; /* left by longjmp: nothing to unblock */
	sigemptyset(&sa.sa_mask);
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = sig;
	dm_timer_tid = gettid();
	ev.sigev_notify_thread_id = dm_timer_tid;
	if (sigaction(sig, &sa, NULL) == 0 &&
	    timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &dm_timer) == 0)
		dm_timer_state = 1;
	return dm_timer_state > 0;
}

static void dm_timer_set(long ns)
{
	struct itimerspec it;
	memset(&it, 0, sizeof it);
	it.it_value.tv_sec = ns / 1000000000L;
	it.it_value.tv_nsec = ns % 1000000000L;
	(void)timer_settime(dm_timer, 0, &it, NULL);
}

enum dm_kind { DM_RUST, DM_CXX };

/* The name demangled by one of the demanglers (malloc'd), or NULL. */
static char *dm_run(const char *name, enum dm_kind kind)
{
	/* volatile: read after a longjmp back into this frame */
	struct dmbuf *volatile b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	volatile int ok = 0;
	/* The timer measures and signals one thread; another thread's call
	 * (none today: the command demangles in one) goes unbounded. */
	volatile bool timed = dm_timer_ready() && gettid() == dm_timer_tid;
	if (!sigsetjmp(b->stop, 0)) {
		if (timed) {
			dm_spent = 0;
			dm_active = b;
			dm_timer_set(DM_CPU_BUDGET_NS);
		}
		/* Rust without DMGL_VERBOSE leaves the hash out; C++ with the
		 * options libstdc++'s __cxa_demangle uses, so names read as
		 * c++filt prints them */
		ok = kind == DM_RUST
			     ? rust_demangle_callback(name, 0, dm_append, b)
			     : cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_TYPES,
							  dm_append, b);
	}
	if (timed) {
		dm_timer_set(0);
		dm_active = NULL;
	}
	char *d = ok && b->s ? b->s : NULL;
	if (!d)
		free(b->s);
	free(b);
	return d;
}

/* Drop the parameter list (and trailing qualifiers) and the return type of
 * a demangled C++ name, in place. */
void fn_strip_params(char *s)
{
	size_t start, end = fn_params_start(s, &start);
	s[end] = 0;
	memmove(s, s + start, end - start + 1);
}

/* Both entry points: C++ names lose their parameter list when strip. */
static char *demangle(const char *name, bool strip)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	/* Rust first: its legacy names are valid C++ manglings too, which
	 * would keep the hash ("main::f::h0123456789abcdef") */
	char *d = dm_run(name, DM_RUST);
	if (d || name[1] != 'Z')
		return d;
	if ((d = dm_run(name, DM_CXX)) && strip)
		fn_strip_params(d);
	return d;
}

char *fn_demangle(const char *name)
{
	return demangle(name, true);
}

char *fn_demangle_full(const char *name)
{
	return demangle(name, false);
}
