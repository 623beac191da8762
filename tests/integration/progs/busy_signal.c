/*
 * busy_signal.c: for tests/integration/signal_inside_test.sh, run under
 * LD_PRELOAD="liballocprof_preload.so libap_busy_alloc.so" at rate 1.
 * Keeps a block from keep_busy_signal_block, then arms the allocator
 * underneath (libs/busy_alloc.c) to raise SIGTERM in its next malloc,
 * which the runtime makes from inside itself for the next sampled block:
 * SIGTERM arrives while this thread is inside the runtime. Left at its
 * default action, it must end the process (status 143), and with
 * dump_on=term (the default) only after the runtime has written its
 * profile. Prints "survived" if the signal did not end it.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void *keep_busy_signal_block(void)
{
	char *volatile p = malloc(1 << 20);
	if (p)
		p[0] = 1;
	return p;
}

int main(void)
{
	void *arm_p = dlsym(RTLD_DEFAULT, "busy_alloc_arm_signal");
	if (!arm_p) {
		fprintf(stderr, "busy_signal: run me under the runtime and libap_busy_alloc.so\n");
		return 3;
	}
	void (*arm)(int);
	memcpy(&arm, &arm_p, sizeof arm_p);
	void *keep = keep_busy_signal_block();
	arm(SIGTERM);
	char *volatile p = malloc(100); /* sampled at rate 1 */
	if (!p)
		return 2;
	p[0] = 1;
	free(p);
	free(keep);
	printf("survived\n");
	return 0;
}
