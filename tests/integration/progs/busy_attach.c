/*
 * busy_attach.c: for tests/integration/attach_busy_test.sh, run under
 * LD_PRELOAD="liballocprof_preload.so libap_busy_alloc.so" at rate 1.
 * Calls ap_runtime_attach from outside the runtime, then arms the
 * allocator underneath (libs/busy_alloc.c) so that the next sampled
 * malloc calls ap_runtime_attach and ap_runtime_detach from inside the
 * runtime, and prints the three results.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	void *arm_p = dlsym(RTLD_DEFAULT, "busy_alloc_arm");
	void *res_p = dlsym(RTLD_DEFAULT, "busy_alloc_results");
	void *att_p = dlsym(RTLD_DEFAULT, "ap_runtime_attach");
	if (!arm_p || !res_p || !att_p) {
		fprintf(stderr, "busy_attach: run me under the runtime and libap_busy_alloc.so\n");
		return 3;
	}
	void (*arm)(void);
	void (*res)(int *, int *);
	int (*att)(const char *);
	memcpy(&arm, &arm_p, sizeof arm_p);
	memcpy(&res, &res_p, sizeof res_p);
	memcpy(&att, &att_p, sizeof att_p);
	int outside = att("");
	arm();
	char *volatile p = malloc(100); /* sampled at rate 1 */
	if (!p)
		return 2;
	p[0] = 1;
	free(p);
	int a, d;
	res(&a, &d);
	printf("outside=%d inside_attach=%d inside_detach=%d\n", outside, a, d);
	return 0;
}
