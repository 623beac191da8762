/*
 * attach_inproc.c: the runtime attached without ptrace, by the program
 * itself (dlopen + ap_runtime_attach, what `allocprof attach` makes a
 * thread do), for tests/integration/attach_runpath_test.sh.
 *
 * Usage: attach_inproc RUNTIME OPTIONS NAME
 * Attaches, then dlopens NAME (a bare name that only this executable's
 * DT_RUNPATH, $ORIGIN/lib, finds) and prints "loaded" or dlerror().
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		printf("runtime: %s\n", dlerror());
		return 1;
	}
	int (*attach)(const char *) = (int (*)(const char *))dlsym(h, "ap_runtime_attach");
	if (!attach || attach(argv[2]) != 0) {
		printf("attach failed\n");
		return 1;
	}
	void *z = dlopen(argv[3], RTLD_NOW);
	printf("%s\n", z ? "loaded" : dlerror());
	return z ? 0 : 1;
}
