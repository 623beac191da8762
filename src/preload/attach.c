/*
 * attach.c: the runtime loaded into a program that is already running
 * (`allocprof attach`, docs/ATTACH.md).
 *
 * The command makes one of the program's threads call dlopen on this
 * library, then ap_runtime_attach(options). The constructor did nothing
 * (the library is not in the global scope: attach_loaded_late), so here the
 * runtime initialises with the options given instead of ALLOCPROF_OPTIONS,
 * finds the allocator underneath through the program's own symbol lookup
 * (RTLD_DEFAULT: the definition the program's GOTs were bound to; RTLD_NEXT
 * from an object loaded RTLD_LOCAL would find libc's even over a preloaded
 * jemalloc), notes the allocator's heap at that moment (the profile's
 * allocprof.attach= comment), and points the GOT entries of the malloc
 * family, the C++ operators, dlopen, dlmopen and dlclose in every loaded
 * object at the runtime's (gotpatch.h). dlopen and dlmopen re-run the
 * patching over the objects they loaded, after the real call returns.
 *
 * ap_runtime_detach writes the final profile and turns sampling off; the
 * entries stay the runtime's (sampled blocks may still be live), now one
 * tail call in front of the allocator. A later attach turns it on again.
 */
#define AP_RUNTIME_BUILDING 1
#include "attach.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "allocprof/runtime.h"
#include "boot.h"
#include "control.h"
#include "gotpatch.h"
#include "http_runtime.h"
#include "procs.h"
#include "runtime_core.h"

bool rt_attached;
const char *rt_attach_options = "";
static char options_buf[4096];
static char note[192];
static got_hook hooks[48];
static size_t nhooks;
static uintptr_t self_base, alloc_base;
static void *(*real_dlopen)(const char *, int);
static void *(*real_dlmopen)(Lmid_t, const char *, int);
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;

/* The names whose GOT entries become the runtime's: interpose.c and
 * interpose_cxx.c define them all. */
static const char *const names[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
	"free_sized", "free_aligned_sized",
	"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
	"_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t",
	"_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
	"_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
	"dlclose", "pthread_getattr_np", "pthread_exit",
};

static uintptr_t object_base(const void *p)
{
	Dl_info di;
	return p && dladdr(p, &di) ? (uintptr_t)di.dli_fbase : 0;
}

/* Preloaded, the runtime is in the program's global scope (the main
 * handle's search list), first or not (LD_PRELOAD="jemalloc runtime"
 * must still get detect.c's warning); dlopen'ed RTLD_LOCAL by the attach,
 * it is not. The main handle is never closed (nothing to release). */
bool attach_loaded_late(void)
{
	void *main_handle = dlopen(NULL, RTLD_NOW);
	return !main_handle || !dlsym(main_handle, "ap_runtime_attach");
}

static void repatch(void)
{
	(void)gotpatch_all(hooks, nhooks, self_base, alloc_base);
}

/*
 * glibc's dlopen looks a bare name up in the DT_RUNPATH (or DT_RPATH) of
 * the object that called it, found by its return address: through the
 * hook that would be the runtime, which has none. So the hook looks in the
 * real caller's first ($ORIGIN expanded) and passes the full name of a
 * file found there; otherwise the name as given.
 */
static const char *caller_search_path(const void *caller, struct link_map **out)
{
	struct link_map *lm = NULL;
	Dl_info di;
	if (!dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !lm->l_ld)
		return NULL;
	uintptr_t strtab = 0, runpath = 0, rpath = 0;
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = (uintptr_t)d->d_un.d_ptr;
		else if (d->d_tag == DT_RUNPATH)
			runpath = (uintptr_t)d->d_un.d_val + 1;
		else if (d->d_tag == DT_RPATH)
			rpath = (uintptr_t)d->d_un.d_val + 1;
	}
	if (!strtab || (!runpath && !rpath))
		return NULL;
	if (strtab < lm->l_addr)
		strtab += lm->l_addr;
	*out = lm;
	return (const char *)strtab + (runpath ? runpath : rpath) - 1;
}

static void *dlopen_for(const void *caller, const char *file, int mode)
{
	struct link_map *lm;
	const char *path = file && !strchr(file, '/') ? caller_search_path(caller, &lm) : NULL;
	if (!path)
		return real_dlopen(file, mode);
	char origin[RT_PATH_CAP], cand[RT_PATH_CAP];
	if (lm->l_name && lm->l_name[0]) {
		snprintf(origin, sizeof origin, "%s", lm->l_name);
	} else {
		ssize_t n = readlink("/proc/self/exe", origin, sizeof origin - 1);
		origin[n > 0 ? n : 0] = 0;
	}
	char *slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ":");
		const char *rest = p;
		size_t rn = n;
		bool o = false;
		if (n >= 7 && !strncmp(p, "$ORIGIN", 7))
			o = true, rest = p + 7, rn = n - 7;
		else if (n >= 9 && !strncmp(p, "${ORIGIN}", 9))
			o = true, rest = p + 9, rn = n - 9;
		int k = snprintf(cand, sizeof cand, "%s%.*s/%s", o ? origin : "", (int)rn,
				 rest, file);
		if (k > 0 && (size_t)k < sizeof cand && access(cand, F_OK) == 0)
			return real_dlopen(cand, mode);
		p += n + (p[n] == ':');
	}
	return real_dlopen(file, mode);
}

static void *hook_dlopen(const char *file, int mode)
{
	void *h = dlopen_for(__builtin_return_address(0), file, mode);
	if (h && !(mode & RTLD_NOLOAD))
		repatch();
	return h;
}

static void *hook_dlmopen(Lmid_t ns, const char *file, int mode)
{
	void *h = real_dlmopen(ns, file, mode);
	if (h && !(mode & RTLD_NOLOAD))
		repatch();
	return h;
}

/* Fill hooks[] with this object's own definitions (a lookup in this
 * object first: its internal references may bind to libc's). */
static int build_hooks(void)
{
	Dl_info self;
	if (!dladdr((const void *)build_hooks, &self) || !self.dli_fname)
		return AP_ENOTFOUND;
	self_base = (uintptr_t)self.dli_fbase;
	void *h = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return AP_ENOTFOUND;
	nhooks = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *f = dlsym(h, names[i]);
		if (f && object_base(f) == self_base)
			hooks[nhooks++] = (got_hook){ names[i], f };
	}
	dlclose(h);
	/* boot_next_sym: a canonical PLT entry for dlopen would jump through the
	 * GOT slot patched to hook_dlopen, which would then call itself. */
	void *d = boot_next_sym("dlopen"), *dm = boot_next_sym("dlmopen");
	if (d) {
		memcpy(&real_dlopen, &d, sizeof d);
		hooks[nhooks++] = (got_hook){ "dlopen", (void *)hook_dlopen };
	}
	if (dm) {
		memcpy(&real_dlmopen, &dm, sizeof dm);
		hooks[nhooks++] = (got_hook){ "dlmopen", (void *)hook_dlmopen };
	}
	return nhooks ? 0 : AP_ENOTFOUND;
}

/* The allocator's heap now, and where the figure comes from. */
static uint64_t heap_now(const char **how)
{
	void *f = dlsym(RTLD_DEFAULT, "mallctl");
	if (f) {
		int (*mallctl)(const char *, void *, size_t *, void *, size_t);
		memcpy(&mallctl, &f, sizeof f);
		uint64_t epoch = 1;
		size_t sz = sizeof epoch, v = 0, vs = sizeof v;
		(void)mallctl("epoch", &epoch, &sz, &epoch, sz);
		if (mallctl("stats.allocated", &v, &vs, NULL, 0) == 0) {
			*how = "jemalloc-stats.allocated";
			return v;
		}
	}
	f = dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
	if (f) {
		int (*get)(const char *, size_t *);
		memcpy(&get, &f, sizeof f);
		size_t v = 0;
		if (get("generic.current_allocated_bytes", &v)) {
			*how = "tcmalloc-current_allocated_bytes";
			return v;
		}
	}
	f = dlsym(RTLD_DEFAULT, "mallinfo2");
	if (f && object_base(f) == object_base((const void *)rt_real.malloc)) {
		struct mallinfo2 (*mi)(void);
		memcpy(&mi, &f, sizeof f);
		struct mallinfo2 m = mi();
		*how = "glibc-mallinfo2";
		return (uint64_t)m.uordblks + (uint64_t)m.hblkhd;
	}
	*how = "unknown";
	return 0;
}

const char *attach_note(void)
{
	return rt_attached && note[0] ? note : NULL;
}

/* First attach: initialise from options, hook, start the helpers. */
static int first_attach(const char *options)
{
	rt_attached = true;
	snprintf(options_buf, sizeof options_buf, "%s", options ? options : "");
	rt_attach_options = options_buf;
	rt_ensure_init();
	if (atomic_load(&rt.state) != RT_READY)
		return AP_EIO; /* could not start here: it logged why */
	uint64_t m = rt_enter();
	const char *how;
	uint64_t heap = heap_now(&how);
	snprintf(note, sizeof note, "%llu %s", (unsigned long long)heap, how);
	int rc = build_hooks();
	if (rc == 0) {
		/* libc stays patched (see gotpatch.h); another allocator not */
		uintptr_t a = object_base((const void *)rt_real.malloc);
		alloc_base = a == object_base(boot_next_sym("fopen")) ? 0 : a;
		repatch();
		dumper_start_if_needed();
		http_runtime_start(&rt.opt.http, rt.opt.http_portfile, rt.opt.verbose);
	}
	rt_leave(m);
	return rc;
}

static void option_error(void *ctx, const char *msg)
{
	(void)ctx;
	rt_log("attach options: %s", msg);
}

/* Attach after a detach: new rate, output and seed (when not 0) from
 * options, alloc view restarted (in-use keeps blocks of earlier windows
 * still live). */
static int again(const char *options)
{
	rt_options o;
	rt_options_default(&o);
	(void)rt_options_parse(&o, options, option_error, NULL);
	uint64_t m = rt_enter();
	pthread_mutex_lock(&rt.dump_lock);
	if (o.output[0])
		snprintf(rt.pattern, sizeof rt.pattern, "%s", o.output);
	table_reset_alloc(&rt.table);
	pthread_mutex_unlock(&rt.dump_lock);
	if (o.seed) {
		/* each thread reseeds on its next slow path (runtime.c) */
		__atomic_store_n(&rt.seed_base, o.seed, __ATOMIC_RELAXED);
		atomic_fetch_add(&rt.seed_gen, 1);
	}
	repatch();
	dumper_start_if_needed();
	http_runtime_start(&rt.opt.http, rt.opt.http_portfile, rt.opt.verbose);
	rt_leave(m);
	return control_start(o.rate ? o.rate : rt.opt.rate);
}

/*
 * The entry points `allocprof attach` calls in a thread it stopped. A
 * thread stopped inside the runtime (a sample half taken: its unwinder's
 * state on the stack, maybe a runtime lock held; or one of the runtime's
 * own threads, which keep the guard for life) must not run them: the
 * command is told AP_EBUSY and tries another thread.
 */
AP_RUNTIME_API int ap_runtime_attach(const char *options)
{
	if (rt_tls.guard)
		return AP_EBUSY;
	pthread_mutex_lock(&attach_lock);
	int s = atomic_load(&rt.state), rc;
	if (s == RT_NEW)
		rc = first_attach(options);
	else if (s == RT_READY && rt_attached && !control_on())
		rc = again(options ? options : "");
	else
		rc = AP_EUNSUPPORTED; /* preloaded, or attached already */
	pthread_mutex_unlock(&attach_lock);
	return rc;
}

AP_RUNTIME_API int ap_runtime_detach(char *path, size_t cap)
{
	if (rt_tls.guard)
		return AP_EBUSY;
	pthread_mutex_lock(&attach_lock);
	if (!rt_attached || atomic_load(&rt.state) != RT_READY || !control_on()) {
		pthread_mutex_unlock(&attach_lock);
		return AP_EUNSUPPORTED;
	}
	(void)control_stop();
	uint64_t m = rt_enter();
	http_runtime_stop();
	dumper_stop();
	char name[RT_PATH_CAP];
	pthread_mutex_lock(&rt.dump_lock);
	int rc = procs_file_name(rt.pattern, rt.dump_seq++, name, sizeof name);
	pthread_mutex_unlock(&rt.dump_lock);
	if (rc == 0)
		rc = dumper_dump_now(name);
	if (rc == 0) {
		procs_file_written(name);
		if (path && cap)
			snprintf(path, cap, "%s", name);
	}
	rt_leave(m);
	pthread_mutex_unlock(&attach_lock);
	return rc;
}
