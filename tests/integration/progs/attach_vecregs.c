/*
 * attach_vecregs.c: a target for attach_test.sh that notices when a thread
 * resumes with vector registers other than it left them.
 *
 * Usage: attach_vecregs DIR
 *
 * One thread spins in a loop of its own code (a safe point for the attach,
 * so the attach's calls are made in it: the main thread waits in
 * pthread_join, a futex, which the attach never chooses). The loop keeps a
 * known value in each of %xmm0-%xmm15 and checks all sixteen on every
 * turn; libc's string functions and the loader, which the attach's calls
 * run, overwrite them. Between bursts of the loop it looks for DIR/stop.
 *
 * Prints "vector mismatches N" (0 when every register came back intact)
 * and exits 0.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

static char stop_path[1100];
static long mismatches;

/* iters turns of the check; the number of turns that saw a wrong value. */
static long spin(long iters)
{
#if defined(__x86_64__)
	static const uint64_t pat[2] = { 0x0123456789abcdefULL, 0x0123456789abcdefULL };
	long bad = 0;
	__asm__ volatile(
		"movdqu (%[p]), %%xmm0\n\t"
		"movdqa %%xmm0, %%xmm1\n\tmovdqa %%xmm0, %%xmm2\n\t"
		"movdqa %%xmm0, %%xmm3\n\tmovdqa %%xmm0, %%xmm4\n\t"
		"movdqa %%xmm0, %%xmm5\n\tmovdqa %%xmm0, %%xmm6\n\t"
		"movdqa %%xmm0, %%xmm7\n\tmovdqa %%xmm0, %%xmm8\n\t"
		"movdqa %%xmm0, %%xmm9\n\tmovdqa %%xmm0, %%xmm10\n\t"
		"movdqa %%xmm0, %%xmm11\n\tmovdqa %%xmm0, %%xmm12\n\t"
		"movdqa %%xmm0, %%xmm13\n\tmovdqa %%xmm0, %%xmm14\n\t"
		"movdqa %%xmm0, %%xmm15\n\t"
		"movq (%[p]), %%rdx\n"
		"1:\n\t"
		"xorl %%ecx, %%ecx\n\t"
#define CHECK(r) "movq %%" r ", %%rax\n\tcmpq %%rdx, %%rax\n\tsetne %%al\n\t" \
		 "movzbl %%al, %%eax\n\torl %%eax, %%ecx\n\t"
		CHECK("xmm0") CHECK("xmm1") CHECK("xmm2") CHECK("xmm3")
		CHECK("xmm4") CHECK("xmm5") CHECK("xmm6") CHECK("xmm7")
		CHECK("xmm8") CHECK("xmm9") CHECK("xmm10") CHECK("xmm11")
		CHECK("xmm12") CHECK("xmm13") CHECK("xmm14") CHECK("xmm15")
#undef CHECK
		"addq %%rcx, %[bad]\n\t"
		"decq %[n]\n\t"
		"jnz 1b\n"
		: [bad] "+r"(bad), [n] "+r"(iters)
		: [p] "r"(pat)
		: "rax", "rcx", "rdx", "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3",
		  "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
		  "xmm12", "xmm13", "xmm14", "xmm15");
	return bad;
#else
	(void)iters;
	return 0;
#endif
}

static void *spinner(void *arg)
{
	(void)arg;
	struct stat st;
	while (stat(stop_path, &st) != 0)
		mismatches += spin(2000000);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	snprintf(stop_path, sizeof stop_path, "%s/stop", argv[1]);
	pthread_t t;
	if (pthread_create(&t, NULL, spinner, NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	printf("vector mismatches %ld\n", mismatches);
	return 0;
}
