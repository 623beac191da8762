/*
 * attach_bench.c: the cost of a malloc+free pair around an in-process
 * attach (bench/suites/attach.sh): the program loads the runtime itself
 * and calls ap_runtime_attach / ap_runtime_detach, exactly what
 * `allocprof attach` makes a thread of the target do, so callgrind can
 * count instructions (valgrind cannot be ptrace-attached to).
 *
 * Usage: attach_bench MODE PAIRS
 *   plain     PAIRS x malloc(32)+free, nothing loaded
 *   attached  attach first (options from AP_ATTACH_OPTIONS), then the pairs
 *   detached  attach, detach, then the pairs (the residual cost)
 * The runtime's path comes from AP_RUNTIME. Prints "sum=N".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t pairs(long n)
{
	uint64_t sum = 0;
	for (long i = 0; i < n; i++) {
		unsigned char *volatile p = malloc(32);
		if (!p)
			abort();
		p[0] = (unsigned char)i;
		sum += p[0];
		free(p);
	}
	return sum;
}

static int attach(int detach)
{
	const char *lib = getenv("AP_RUNTIME");
	const char *opts = getenv("AP_ATTACH_OPTIONS");
	void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
	if (!h) {
		fprintf(stderr, "attach_bench: set AP_RUNTIME: %s\n", lib ? dlerror() : "unset");
		return -1;
	}
	int (*at)(const char *) = (int (*)(const char *))dlsym(h, "ap_runtime_attach");
	int (*de)(char *, size_t) = (int (*)(char *, size_t))dlsym(h, "ap_runtime_detach");
	if (!at || !de || at(opts ? opts : "") != 0)
		return -1;
	char path[4096];
	return detach ? de(path, sizeof path) : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: attach_bench plain|attached|detached PAIRS\n");
		return 2;
	}
	long n = atol(argv[2]);
	if (strcmp(argv[1], "plain") != 0 &&
	    attach(strcmp(argv[1], "detached") == 0) != 0) {
		fprintf(stderr, "attach_bench: attach failed\n");
		return 1;
	}
	printf("sum=%llu\n", (unsigned long long)pairs(n));
	return 0;
}
