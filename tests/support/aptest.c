/*
 * aptest.c: main() and bookkeeping for the aptest.h harness.
 */
#define _POSIX_C_SOURCE 200809L
#include "aptest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define AP_MAX_TESTS 512

static struct {
	const char *name;
	ap_test_fn fn;
} tests[AP_MAX_TESTS];
static int ntests;
int ap_test_failed_flag;
int ap_test_skipped_flag;

void ap_test_register(const char *name, ap_test_fn fn)
{
	if (ntests == AP_MAX_TESTS) {
		fprintf(stderr, "aptest: too many tests\n");
		exit(2);
	}
	tests[ntests].name = name;
	tests[ntests].fn = fn;
	ntests++;
}

void ap_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "  %s:%d: check failed: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	ap_test_failed_flag = 1;
}

void ap_test_skip(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	printf("  %s:%d: skipped: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	ap_test_skipped_flag = 1;
}

const char *ap_test_datadir(void)
{
	const char *d = getenv("AP_TESTDATA_DIR");
#ifdef AP_TESTDATA_DEFAULT
	if (!d)
		d = AP_TESTDATA_DEFAULT;
#else
	/* No fallback to guess: the tables live in tests/data only. */
#error "AP_TESTDATA_DEFAULT must name tests/data (tests/CMakeLists.txt)"
#endif
	return d;
}

const char *ap_test_bindir(void)
{
	const char *d = getenv("AP_BINDIR");
#ifdef AP_BINDIR_DEFAULT
	if (!d)
		d = AP_BINDIR_DEFAULT;
#endif
	return d ? d : ".";
}

int ap_test_find_library(const char *soname, char *path, size_t cap)
{
	/* Ask the dynamic linker: with LD_TRACE_LOADED_OBJECTS it resolves
	 * a program's libraries (preloads included) and lists them as
	 * "\tNAME => PATH (ADDRESS)" without running it. Loading the library
	 * for real is no test: allocators with static TLS refuse dlopen. */
	int fd[2];
	if (cap == 0 || pipe(fd))
		return -1;
	fflush(NULL); /* the child must not flush our buffers again */
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		close(fd[0]);
		int null = open("/dev/null", O_WRONLY);
		/* stdout to us; ld.so's complaint about a missing one away */
		if (dup2(fd[1], 1) < 0 || null < 0 || dup2(null, 2) < 0)
			_exit(127);
		setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
		setenv("LD_PRELOAD", soname, 1);
		execl("/proc/self/exe", "ap_test_find_library", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	char out[16384];
	size_t n = 0;
	ssize_t r;
	while (n + 1 < sizeof out &&
	       (r = read(fd[0], out + n, sizeof out - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	out[n] = '\0';
	close(fd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	size_t sl = strlen(soname);
	for (char *line = out; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		while (*line == '\t' || *line == ' ')
			line++;
		if (!strncmp(line, soname, sl) && !strncmp(line + sl, " => /", 5)) {
			char *p = line + sl + 4, *end = strstr(p, " (");
			size_t len = end ? (size_t)(end - p) : strlen(p);
			if (len + 1 > cap)
				return -1;
			memcpy(path, p, len);
			path[len] = '\0';
			return 0;
		}
		line = next;
	}
	return -1;
}

static int selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

/*
 * Exit status: 1 when a test failed; else 77 (CTest's SKIP_RETURN_CODE) when
 * a test was skipped, so the run shows as skipped rather than passed; else 0.
 * Every selected test runs either way.
 */
int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < ntests; i++) {
		if (!selected(argc, argv, tests[i].name))
			continue;
		ap_test_failed_flag = 0;
		ap_test_skipped_flag = 0;
		tests[i].fn();
		const char *verdict = ap_test_failed_flag    ? "FAIL"
				      : ap_test_skipped_flag ? "skip"
							     : "ok  ";
		printf("%s %s\n", verdict, tests[i].name);
		if (ap_test_failed_flag)
			failed++;
		else if (ap_test_skipped_flag)
			skipped++;
		else
			passed++;
	}
	if (skipped)
		printf("%d passed, %d failed, %d skipped\n", passed, failed,
		       skipped);
	else
		printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : skipped ? AP_TEST_SKIP_CODE : 0;
}
