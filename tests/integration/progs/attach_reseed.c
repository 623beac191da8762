/*
 * attach_reseed.c: four attach/detach windows in one process, made by the
 * program itself (dlopen + ap_runtime_attach / ap_runtime_detach, what
 * `allocprof attach` and `detach` make a thread do), each doing the same
 * allocations; for tests/integration/attach_coverage_test.sh, which checks
 * that seed= given to a later attach reseeds the sampler.
 *
 * Usage: attach_reseed RUNTIME DIR
 * Windows 1..4 use seed 1, 5, 6, 5 and write DIR/pN.pb.gz. Single-threaded
 * and deterministic: windows 2 and 4 must sample the same allocations.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
	static const int seeds[] = { 1, 5, 6, 5 };
	if (argc != 3)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		printf("runtime: %s\n", dlerror());
		return 1;
	}
	int (*attach)(const char *) = (int (*)(const char *))dlsym(h, "ap_runtime_attach");
	int (*detach)(char *, size_t) =
		(int (*)(char *, size_t))dlsym(h, "ap_runtime_detach");
	if (!attach || !detach)
		return 1;
	for (int k = 0; k < 4; k++) {
		char opts[1200], path[1200];
		snprintf(opts, sizeof opts, "rate=4096,seed=%d,output=%s/p%d.pb.gz",
			 seeds[k], argv[2], k + 1);
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
