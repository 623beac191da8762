/*
 * inject.h: calling functions inside another process (ptrace, Linux
 * x86_64), for `allocprof attach` and `detach` (docs/ATTACH.md).
 *
 * inject_open looks at the target (/proc/PID/maps, /proc/PID/exe) and
 * refuses what cannot work; inject_call stops one thread of the target at
 * a safe point, makes it call a function with up to three arguments (the
 * strings they point to are copied below its stack pointer), reads the
 * result and resumes the thread exactly where it was (a system call it was
 * blocked in is restarted). Only that thread is stopped, and only for the
 * call.
 *
 * A safe point: the thread was blocked in a system call that none of
 * libc's allocator or loader paths makes while holding a lock (not futex,
 * mmap, munmap, mprotect, brk, madvise, mremap), outside the dynamic
 * loader; or it was running code outside libc, the loader, the C++
 * runtime, libgcc and the allocator libraries. A thread stopped inside
 * malloc (holding an arena lock) or inside dlopen (holding the loader's
 * lock) would deadlock the call; such threads are let go and others tried,
 * for up to INJECT_SAFE_WAIT_MS.
 */
#ifndef ALLOCPROF_CLI_INJECT_H
#define ALLOCPROF_CLI_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define INJECT_SAFE_WAIT_MS 3000
#define INJECT_CALL_TIMEOUT_MS 20000
#define INJECT_MAX_UNSAFE 64

typedef struct inject_range {
	uintptr_t lo, hi;
} inject_range;

typedef struct inject_proc {
	pid_t pid;
	char libc[4096];       /* path of the target's libc.so.6 */
	uintptr_t libc_base;   /* where its first byte is mapped */
	char runtime[4096];    /* path of liballocprof_preload.so, if mapped */
	uintptr_t runtime_base;
	bool preloaded;        /* the runtime came with LD_PRELOAD */
	inject_range loader;   /* the dynamic loader's code */
	inject_range unsafe[INJECT_MAX_UNSAFE]; /* code where a stop is unsafe */
	int nunsafe;
	pid_t last_tid;        /* the thread the last call ran in */
	pid_t prefer;          /* tried first by the next call (0: none) */
	pid_t avoid[16];       /* threads the next calls leave alone */
	int navoid;
} inject_proc;

/*
 * Look at process pid: 0, or a non-zero exit status after one line in err
 * (no such process, not x86_64, statically linked, musl or another libc,
 * ptrace not permitted...). runtime_name: the runtime's file name, to find
 * it in the maps.
 */
int inject_open(pid_t pid, const char *runtime_name, inject_proc *p, char *err,
		size_t errlen);
/* Read the maps again (after the runtime was loaded). */
int inject_rescan(inject_proc *p, const char *runtime_name, char *err, size_t errlen);

/* One argument of a remote call: a number, or bytes copied into the target
 * (a pointer to the copy is passed), or an output buffer of n bytes whose
 * content is copied back into out after the call. */
typedef struct inject_arg {
	uint64_t value;
	const void *data; /* copied in when non-NULL */
	size_t n;         /* bytes of data, or of the output buffer */
	void *out;        /* copied back when non-NULL (n bytes) */
} inject_arg;

/*
 * Call fn (an address in the target) with up to 3 arguments in a thread
 * stopped at a safe point; *ret gets its return value (rax). 0, or a
 * non-zero exit status after one line in err. stopped_ns: how long the
 * thread was stopped (may be NULL). The thread's whole register state is
 * put back afterwards: the general registers and the x87/SSE/AVX state
 * (the call's code uses vector registers the interrupted code may hold
 * live values in). p->prefer is tried first, p->avoid skipped while
 * another thread is there; p->last_tid tells which thread ran the call.
 */
int inject_call(inject_proc *p, uintptr_t fn, const inject_arg *args, int nargs,
		uint64_t *ret, uint64_t *stopped_ns, char *err, size_t errlen);

/* Is pid still running (not gone, not a zombie)? */
bool inject_alive(pid_t pid);

/* Read a NUL-terminated string at addr in the target into out. */
int inject_read_string(pid_t pid, uintptr_t addr, char *out, size_t cap);

#endif
