/*
 * aptest.c: main() and bookkeeping for the aptest.h harness.
 */
#include "aptest.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define AP_MAX_TESTS 512

static struct {
	const char *name;
	ap_test_fn fn;
} tests[AP_MAX_TESTS];
static int ntests;
int ap_test_failed_flag;

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

static int selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < ntests; i++) {
		if (!selected(argc, argv, tests[i].name))
			continue;
		ap_test_failed_flag = 0;
		tests[i].fn();
		printf("%s %s\n", ap_test_failed_flag ? "FAIL" : "ok  ",
		       tests[i].name);
		if (ap_test_failed_flag)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
