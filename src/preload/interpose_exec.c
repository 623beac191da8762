/*
 * interpose_exec.c: the exec family, exported by liballocprof_preload.so.
 *
 * exec replaces the program without exit handlers, destructors or _exit:
 * what it sampled since its last dump would be lost. Each entry point
 * first writes the profile (rt_before_exec: only when the process sampled
 * something since it started or forked, never in a vfork child or a fault's
 * handler), then calls the next definition (glibc's). The program that
 * follows, same pid, starts a new runtime whose file names go beside this
 * one's instead of over them (procs.h, names).
 *
 * glibc's execl, execv and execvp call its execve internally, not through
 * the exported symbol, so every variant is interposed. posix_spawn and
 * posix_spawnp are too, for exec_note's check alone. The list forms
 * build their argument vector on the stack, as glibc's do, or in a mapping
 * when it would take more than ARGS_ON_STACK pointers.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <spawn.h>
#include <sys/mman.h>
#include <unistd.h>

#include "boot.h"
#include "runtime_core.h"

#define EXPORT __attribute__((visibility("default")))

extern char **environ;

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]);
EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		    int flags);

/* The next definitions, looked up by the constructor: a vfork child
 * calling execve must not be the first to ask the loader (its lock may be
 * held by a thread of the parent, which goes on running). */
enum { F_EXECVE, F_EXECV, F_EXECVP, F_EXECVPE, F_FEXECVE, F_EXECVEAT, F_SPAWN, F_SPAWNP,
       F_N };
static const char *const names[F_N] = { "execve",  "execv",   "execvp",
					 "execvpe", "fexecve", "execveat",
					 "posix_spawn", "posix_spawnp" };
static void *_Atomic next[F_N];

__attribute__((constructor)) static void resolve_exec(void)
{
	for (int i = 0; i < F_N; i++)
		if (!atomic_load_explicit(&next[i], memory_order_relaxed))
			atomic_store_explicit(&next[i], boot_next_sym(names[i]),
					      memory_order_relaxed);
}

/* The next definition of entry i into *fp (a function pointer); false with
 * errno ENOSYS when there is none. */
static bool next_fn(int i, void *fp)
{
	void *f = atomic_load_explicit(&next[i], memory_order_relaxed);
	if (!f) {
		resolve_exec();
		f = atomic_load_explicit(&next[i], memory_order_relaxed);
	}
	if (!f) {
		errno = ENOSYS;
		return false;
	}
	memcpy(fp, &f, sizeof f);
	return true;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	rt_before_exec(path, envp);
	execve_fn f;
	if (!next_fn(F_EXECVE, &f))
		return -1;
	return f(path, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[])
{
	rt_before_exec(path, environ);
	execv_fn f;
	if (!next_fn(F_EXECV, &f))
		return -1;
	return f(path, argv);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	rt_before_exec(file, environ);
	execv_fn f;
	if (!next_fn(F_EXECVP, &f))
		return -1;
	return f(file, argv);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	rt_before_exec(file, envp);
	execve_fn f;
	if (!next_fn(F_EXECVPE, &f))
		return -1;
	return f(file, argv, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	rt_before_exec(NULL, envp);
	fexecve_fn f;
	if (!next_fn(F_FEXECVE, &f))
		return -1;
	return f(fd, argv, envp);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		    int flags)
{
	rt_before_exec(path, envp);
	execveat_fn f;
	if (!next_fn(F_EXECVEAT, &f))
		return -1;
	return f(dirfd, path, argv, envp, flags);
}

/* posix_spawn runs the program in a new process (glibc: a clone that
 * shares this one's memory, then its internal execve, which nothing here
 * sees): nothing of this process is lost, but under exec_note the program
 * it starts is checked like an exec's (rt_note_exec). */
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	rt_note_exec(path, envp);
	spawn_fn f;
	if (!next_fn(F_SPAWN, &f))
		return ENOSYS; /* posix_spawn returns the error */
	return f(pid, path, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	rt_note_exec(file, envp);
	spawn_fn f;
	if (!next_fn(F_SPAWNP, &f))
		return ENOSYS;
	return f(pid, file, fa, attr, argv, envp);
}

/* The list forms: count the arguments, then gather them (and execle's
 * environment, after the terminating NULL) into a vector. */
#define ARGS_ON_STACK 64

static size_t count_args(const char *arg, va_list ap)
{
	size_t n = 1;
	while (arg && va_arg(ap, const char *))
		n++;
	return arg ? n : 0;
}

/* A vector of n + 1 pointers: buf when it fits, else a fresh mapping
 * (*mapped = its length, for release_vec; 0 otherwise). */
static char **vec_for(size_t n, char **buf, size_t *mapped)
{
	*mapped = 0;
	if (n < ARGS_ON_STACK)
		return buf;
	size_t len = (n + 1) * sizeof(char *);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	*mapped = len;
	return m;
}

static void release_vec(char **v, size_t mapped)
{
	if (mapped) {
		int e = errno; /* the exec's */
		munmap(v, mapped);
		errno = e;
	}
}

enum list_form { LIST_EXECL, LIST_EXECLP, LIST_EXECLE };

static int exec_list(enum list_form form, const char *path, const char *arg, va_list count,
		     va_list ap)
{
	size_t n = count_args(arg, count);
	char *buf[ARGS_ON_STACK];
	size_t mapped;
	char **argv = vec_for(n, buf, &mapped);
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	argv[0] = (char *)(uintptr_t)arg;
	for (size_t i = 1; i <= n; i++) /* argv[n] is the terminating NULL */
		argv[i] = va_arg(ap, char *);
	int rc;
	if (form == LIST_EXECLE)
		rc = execve(path, argv, va_arg(ap, char *const *));
	else if (form == LIST_EXECLP)
		rc = execvp(path, argv);
	else
		rc = execve(path, argv, environ);
	release_vec(argv, mapped);
	return rc;
}

#define LIST_ENTRY(name, form)                                                \
	EXPORT int name(const char *path, const char *arg, ...)                \
	{                                                                     \
		va_list count, ap;                                            \
		va_start(count, arg);                                         \
		va_start(ap, arg);                                            \
		int rc = exec_list(form, path, arg, count, ap);               \
		va_end(ap);                                                   \
		va_end(count);                                                \
		return rc;                                                    \
	}

LIST_ENTRY(execl, LIST_EXECL)
LIST_ENTRY(execlp, LIST_EXECLP)
LIST_ENTRY(execle, LIST_EXECLE)
