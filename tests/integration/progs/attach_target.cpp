/*
 * attach_target.cpp: a long-running program for `allocprof attach`
 * (tests/integration/attach_test.sh), started without the runtime.
 *
 * Usage: attach_target DIR
 *
 * Three background threads allocate and free all the time (C malloc,
 * realloc, calloc; C++ new/delete and std::string/std::vector), checking
 * the contents of every block. The main thread polls DIR:
 *
 *   DIR/window      while it exists, the main thread makes allocations in
 *                   window_c (malloc, 100 bytes each) and window_cxx
 *                   (new char[200]), counting them, and once dlopens libz
 *                   and lets deflateInit2_ allocate (window_zlib);
 *   DIR/window.end  ends the window: the counts go to DIR/counts
 *                   ("c OBJECTS BYTES" and "cxx OBJECTS BYTES", blocks
 *                   freed again right away), then DIR/window.done appears;
 *   DIR/stop        the program ends.
 *
 * Windows repeat: once DIR/window and DIR/window.end are both gone after a
 * window, the counts restart from 0 and DIR/counts and DIR/window.done are
 * removed (their absence tells the test the next window may open;
 * attach_coverage_test.sh runs many windows on one process).
 *
 * stdout is one line that does not depend on timing or on the profiler:
 * "threads 3 errors 0" (a corrupted block would count as an error).
 * Exit 0, or 77 when libz.so.1 cannot be loaded.
 */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <pthread.h>
#include <string>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector>

static std::atomic<bool> stop_all{false};
static std::atomic<long> errors{0};
static char dir[1024];

static bool exists(const char *name)
{
	char p[1100];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	struct stat st;
	return stat(p, &st) == 0;
}

static void nap(long ns)
{
	struct timespec t = { 0, ns };
	nanosleep(&t, nullptr);
}

static void check(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v) {
			errors++;
			return;
		}
}

extern "C" __attribute__((noinline)) void *bg_c(size_t n)
{
	unsigned char *p = (unsigned char *)malloc(n);
	memset(p, 0x5a, n);
	p = (unsigned char *)realloc(p, 2 * n);
	check(p, n, 0x5a);
	unsigned char *q = (unsigned char *)calloc(4, n);
	check(q, 4 * n, 0);
	free(q);
	return p;
}

__attribute__((noinline)) static std::string bg_cxx(int i)
{
	std::vector<std::string> v;
	for (int k = 0; k < 8; k++)
		v.push_back(std::string(40 + (size_t)k, (char)('a' + (i + k) % 26)));
	char *arr = new char[300];
	memset(arr, 7, 300);
	check((unsigned char *)arr, 300, 7);
	delete[] arr;
	return v[3];
}

static void *background(void *arg)
{
	long id = (long)arg;
	for (int i = 0; !stop_all; i++) {
		void *p = bg_c(64 + (size_t)(i % 512));
		std::string s = bg_cxx(i + (int)id);
		if (s.size() != 43)
			errors++;
		free(p);
		if (i % 64 == 0)
			nap(200000);
	}
	return nullptr;
}

extern "C" __attribute__((noinline)) void *window_c(void)
{
	return malloc(100);
}

__attribute__((noinline)) static char *window_cxx(void)
{
	return new char[200];
}

typedef int (*init2_fn)(void *, int, int, int, int, int, const char *, int);
typedef int (*end_fn)(void *);
typedef const char *(*version_fn)(void);

/* libz loaded while attached: its own calls to malloc must be seen. */
__attribute__((noinline)) static int window_zlib(void)
{
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 77;
	init2_fn init = (init2_fn)dlsym(h, "deflateInit2_");
	end_fn end = (end_fn)dlsym(h, "deflateEnd");
	version_fn ver = (version_fn)dlsym(h, "zlibVersion");
	if (!init || !end || !ver)
		return 77;
	static unsigned char strm[256]; /* z_stream, zeroed: zalloc = malloc */
	memset(strm, 0, sizeof strm);
	if (init(strm, 6, 8, 15, 8, 0, ver(), 112) == 0)
		end(strm);
	return 0;
}

static void write_counts(unsigned long cn, unsigned long cxn)
{
	char p[1100];
	snprintf(p, sizeof p, "%s/counts", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return;
	fprintf(f, "c %lu %lu\ncxx %lu %lu\n", cn, cn * 100, cxn, cxn * 200);
	fclose(f);
	snprintf(p, sizeof p, "%s/window.done", dir);
	f = fopen(p, "w");
	if (f)
		fclose(f);
}

/* Ready for the next window: remove the last window's files. */
static void rearm(void)
{
	char p[1100];
	snprintf(p, sizeof p, "%s/counts", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/window.done", dir);
	unlink(p);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	snprintf(dir, sizeof dir, "%s", argv[1]);
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], nullptr, background, (void *)i);
	unsigned long cn = 0, cxn = 0;
	bool zlib_done = false, counted = false;
	int rc = 0;
	while (!exists("stop")) {
		if (exists("window") && !counted && !exists("window.end")) {
			if (!zlib_done) {
				rc = window_zlib();
				zlib_done = true;
			}
			for (int k = 0; k < 10; k++) {
				free(window_c());
				delete[] window_cxx();
				cn++;
				cxn++;
			}
		} else if (exists("window.end") && !counted) {
			write_counts(cn, cxn);
			counted = true;
		} else if (counted && !exists("window") && !exists("window.end")) {
			rearm();
			cn = cxn = 0;
			counted = false;
		}
		nap(1000000);
	}
	stop_all = true;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], nullptr);
	printf("threads 3 errors %ld\n", errors.load());
	return rc;
}
