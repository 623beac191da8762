/*
 * aptest.h: the project's minimal test harness. A test file defines tests with
 * AP_TEST(name) { ... } and links tests/support/aptest.c, which provides main:
 * it runs every test (or those named on the command line), prints one line per
 * test and closes with "N passed, N failed".
 *
 * Checks never evaluate their arguments more than once and never hide side
 * effects: a failed check records the failure, prints file:line and the
 * expression, and returns from the test.
 *
 * A test that cannot run here (a library or a privilege the machine lacks)
 * calls AP_SKIP("reason", ...): the reason is printed, the test returns,
 * the other tests still run, and the program exits 77 -- CTest's
 * SKIP_RETURN_CODE, so the run is reported as skipped, never as passed --
 * unless a test failed (exit 1).
 */
#ifndef ALLOCPROF_APTEST_H
#define ALLOCPROF_APTEST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*ap_test_fn)(void);
void ap_test_register(const char *name, ap_test_fn fn);
void ap_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Directory of the reference tables: AP_TESTDATA_DIR, else tests/data. */
const char *ap_test_datadir(void);
/* Directory holding build outputs (allocprof, liballocprof_preload.so). */
const char *ap_test_bindir(void);
void ap_test_skip(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Absolute path of the shared library the dynamic linker finds for soname
 * (e.g. "libjemalloc.so.2") into path; 0, or -1 when it finds none. The
 * library is never loaded into the test itself.
 */
int ap_test_find_library(const char *soname, char *path, size_t cap);
extern int ap_test_failed_flag;
extern int ap_test_skipped_flag;

/* Exit status of a test program that skipped (CTest SKIP_RETURN_CODE). */
#define AP_TEST_SKIP_CODE 77

#define AP_TEST(name)                                                        \
	static void name(void);                                              \
	__attribute__((constructor)) static void ap_reg_##name(void)         \
	{                                                                    \
		ap_test_register(#name, name);                               \
	}                                                                    \
	static void name(void)

#define AP_CHECK(cond)                                                       \
	do {                                                                 \
		if (!(cond)) {                                               \
			ap_test_fail(__FILE__, __LINE__, "%s", #cond);       \
			return;                                              \
		}                                                            \
	} while (0)

#define AP_SKIP(...)                                                         \
	do {                                                                 \
		ap_test_skip(__FILE__, __LINE__, __VA_ARGS__);               \
		return;                                                      \
	} while (0)

#define AP_CHECK_MSG(cond, ...)                                              \
	do {                                                                 \
		if (!(cond)) {                                               \
			ap_test_fail(__FILE__, __LINE__, __VA_ARGS__);       \
			return;                                              \
		}                                                            \
	} while (0)

#define AP_CHECK_EQ_U64(a, b)                                                \
	do {                                                                 \
		uint64_t ap_a_ = (uint64_t)(a), ap_b_ = (uint64_t)(b);       \
		AP_CHECK_MSG(ap_a_ == ap_b_, "%s == %s: %llu != %llu", #a,   \
			     #b, (unsigned long long)ap_a_,                  \
			     (unsigned long long)ap_b_);                     \
	} while (0)

#define AP_CHECK_EQ_INT(a, b)                                                \
	do {                                                                 \
		long long ap_a_ = (long long)(a), ap_b_ = (long long)(b);    \
		AP_CHECK_MSG(ap_a_ == ap_b_, "%s == %s: %lld != %lld", #a,   \
			     #b, ap_a_, ap_b_);                              \
	} while (0)

/* |a - b| <= abs_tol or <= rel_tol * |b|. */
#define AP_CHECK_NEAR(a, b, rel_tol, abs_tol)                                \
	do {                                                                 \
		double ap_a_ = (double)(a), ap_b_ = (double)(b);             \
		double ap_d_ = fabs(ap_a_ - ap_b_);                          \
		AP_CHECK_MSG(ap_d_ <= (abs_tol) ||                           \
				     ap_d_ <= (rel_tol) * fabs(ap_b_),       \
			     "%s ~ %s: %.17g vs %.17g (diff %.3g)", #a, #b,  \
			     ap_a_, ap_b_, ap_d_);                           \
	} while (0)

#endif
