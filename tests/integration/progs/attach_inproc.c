/*
 * attach_inproc.c: the runtime attached without ptrace, by the program
 * itself (dlopen + ap_runtime_attach / ap_runtime_detach, what
 * `allocprof attach` and `detach` make a thread do).
 *
 * Usage: attach_inproc RUNTIME OPTIONS NAME
 * (tests/integration/attach_runpath_test.sh) attaches, then dlopens NAME
 * (a bare name that only this executable's DT_RUNPATH, $ORIGIN/lib,
 * finds) and prints "loaded" or dlerror().
 *
 * Usage: attach_inproc RUNTIME --reseed DIR
 * (tests/integration/attach_coverage_test.sh) makes four attach/detach
 * windows doing the same allocations, seeded 1, 5, 6, 5, writing
 * DIR/pN.pb.gz, and prints "ok". Single-threaded and deterministic: if a
 * later attach's seed= is applied, windows 2 and 4 sample the same
 * allocations. (tests/integration/attach_canonical_plt_test.sh builds it
 * without PIE and runs this mode too: main's use of malloc's address then
 * makes the executable export a canonical PLT entry for malloc.)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*attach_fn)(const char *);
typedef int (*detach_fn)(char *, size_t);

__attribute__((noinline)) void *reseed_a(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) void *reseed_b(size_t n)
{
	return malloc(n);
}

static void work(void)
{
	for (size_t i = 0; i < 4000; i++) {
		free(reseed_a(64 + (i * 37) % 997));
		free(reseed_b(64 + (i * 53) % 991));
	}
}

static int reseed(void *h, attach_fn attach, const char *dir)
{
	static const int seeds[] = { 1, 5, 6, 5 };
	detach_fn detach = (detach_fn)dlsym(h, "ap_runtime_detach");
	if (!detach)
		return 1;
	for (int k = 0; k < 4; k++) {
		char opts[1200], path[1200];
		snprintf(opts, sizeof opts, "rate=4096,seed=%d,output=%s/p%d.pb.gz",
			 seeds[k], dir, k + 1);
		if (attach(opts) != 0) {
			printf("window %d: attach failed\n", k + 1);
			return 1;
		}
		work();
		if (detach(path, sizeof path) != 0) {
			printf("window %d: detach failed\n", k + 1);
			return 1;
		}
	}
	printf("ok\n");
	return 0;
}

/* Set by main from malloc's address: in code built without PIE that is an
 * absolute reference, which the linker meets with a canonical PLT entry
 * for malloc in the executable, exported with the entry's address (as
 * Debian's python3 and node have it). */
void *(*volatile ap_malloc_ref)(size_t);

int main(int argc, char **argv)
{
	ap_malloc_ref = malloc;
	if (argc != 4)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		printf("runtime: %s\n", dlerror());
		return 1;
	}
	attach_fn attach = (attach_fn)dlsym(h, "ap_runtime_attach");
	if (!attach)
		return 1;
	if (strcmp(argv[2], "--reseed") == 0)
		return reseed(h, attach, argv[3]);
	if (attach(argv[2]) != 0) {
		printf("attach failed\n");
		return 1;
	}
	void *z = dlopen(argv[3], RTLD_NOW);
	printf("%s\n", z ? "loaded" : dlerror());
	return z ? 0 : 1;
}
