/*
 * run_exact_test.c: the preload runtime, run on a real program, must report
 * exactly the true bytes and objects per allocation site at rate=1, in both
 * the alloc and the inuse view (AP_TEST_PRELOAD: needs
 * liballocprof_preload.so, so it is skipped in sanitizer builds).
 *
 * The program is tests/integration/progs/exact_allocs: it prints its text
 * range, the address of each of its functions and, per site function, the
 * objects and bytes it allocated and still holds at exit. This test runs it
 * with LD_PRELOAD and ALLOCPROF_OPTIONS=rate=1,..., decodes the profile with
 * ap_pprof_decode and attributes each sample to the innermost frame that
 * lies in the program's text (the function with the greatest start address
 * not above it). Samples whose innermost own frame is not a site (stdio,
 * thread creation) are not counted. With rate=1 every allocation is a sample
 * with probability 1 and Horvitz-Thompson weight 1, so the sums must equal
 * the program's counts exactly: no tolerance.
 *
 * The same check runs after fork (the child does the work and writes its
 * own profile), with jemalloc, tcmalloc and mimalloc preloaded underneath
 * (the test reports a skip, exit 77, when one is not installed), and at the
 * default rate for allocations much larger than the rate, which are sampled
 * with probability 1 - exp(-Z/R) = 1 - exp(-20) and therefore also
 * estimated exactly after rounding (Z/pi - Z < 1e-2 bytes).
 *
 * The C++ program exact_cxx gets the same check over glibc (libstdc++'s
 * operators), jemalloc, tcmalloc and mimalloc (which define operator new
 * and delete themselves).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "allocprof/profile.h"
#include "aptest.h"

#define MAX_FUNCS 64
#define MAX_SITES 16
#define MAX_PROFILES 8

struct func {
	char name[64];
	uint64_t addr;
	int site; /* index into sites, or -1 */
};

struct site {
	char name[64];
	int64_t want[4], got[4]; /* alloc objs, alloc bytes, inuse objs, bytes */
};

struct expect {
	uint64_t text_lo, text_hi;
	struct func funcs[MAX_FUNCS];
	size_t nfuncs;
	struct site sites[MAX_SITES];
	size_t nsites;
};

/* Sample types in the order of site.want/got. */
static const char *const kinds[4] = {AP_ST_ALLOC_OBJECTS, AP_ST_ALLOC_SPACE,
				     AP_ST_INUSE_OBJECTS, AP_ST_INUSE_SPACE};

static char *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		if (n == cap) {
			char *b = realloc(buf, 2 * cap + 1);
			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0) {
				free(buf);
				buf = NULL;
			}
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	if (buf) {
		buf[n] = 0;
		*len = n;
	}
	return buf;
}

/*
 * Wait for pid at most RUN_TIMEOUT_S seconds; on timeout kill its process
 * group (the program and any child it forked) and return -3. Otherwise the
 * exit status, or 128 + the signal that killed it.
 */
#define RUN_TIMEOUT_S 20
static int wait_bounded(pid_t pid)
{
	int st;
	for (int ms = 0; ms < RUN_TIMEOUT_S * 1000; ms += 10) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (w < 0 && errno != EINTR)
			return -1;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "  exact_allocs hung for %d s: killed\n", RUN_TIMEOUT_S);
	kill(-pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -3;
}

/* The program run: exact_allocs (C), or exact_cxx (C++: operator new and
 * delete in every form, std::string, std::vector, std::map). */
static const char *exact_prog = "exact_allocs";

/*
 * Run AP_BINDIR/tests/integration/progs/<exact_prog> with the runtime (and
 * preload_extra after it, may be NULL), its stdout in dir/expect.txt.
 * Returns the exit status, or -1 if it could not be run.
 */
static int run_program(const char *dir, const char *options,
		       const char *preload_extra, const char *arg1,
		       const char *arg2)
{
	char prog[4096], lib[4096], out[4096], preload[8192], opts[8192];
	const char *bin = ap_test_bindir();
	snprintf(prog, sizeof prog, "%s/tests/integration/progs/%s", bin, exact_prog);
	snprintf(lib, sizeof lib, "%s/liballocprof_preload.so", bin);
	snprintf(out, sizeof out, "%s/expect.txt", dir);
	snprintf(preload, sizeof preload, "%s%s%s", lib,
		 preload_extra ? " " : "", preload_extra ? preload_extra : "");
	snprintf(opts, sizeof opts, "%s,output=%s/exact.%%p.pb.gz", options, dir);
	if (access(prog, X_OK) || access(lib, R_OK)) {
		fprintf(stderr, "  missing %s or %s\n", prog, lib);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0); /* its own group, so a hang can be killed whole */
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		setenv("LD_PRELOAD", preload, 1);
		setenv("ALLOCPROF_OPTIONS", opts, 1);
		execl(prog, prog, arg1, arg2, (char *)NULL);
		_exit(127);
	}
	return wait_bounded(pid);
}

static int parse_expect(const char *dir, struct expect *e)
{
	char path[4096];
	size_t len;
	snprintf(path, sizeof path, "%s/expect.txt", dir);
	char *text = read_all(path, &len);
	if (!text)
		return -1;
	memset(e, 0, sizeof *e);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64];
		unsigned long long a, b;
		long long v[4];
		if (sscanf(line, "text %llx %llx", &a, &b) == 2) {
			e->text_lo = a;
			e->text_hi = b;
		} else if (sscanf(line, "func %63s %llx", name, &a) == 2 &&
			   e->nfuncs < MAX_FUNCS) {
			struct func *f = &e->funcs[e->nfuncs++];
			snprintf(f->name, sizeof f->name, "%s", name);
			f->addr = a;
			f->site = -1;
		} else if (sscanf(line, "site %63s %lld %lld %lld %lld", name,
				  &v[0], &v[1], &v[2], &v[3]) == 5 &&
			   e->nsites < MAX_SITES) {
			struct site *s = &e->sites[e->nsites++];
			snprintf(s->name, sizeof s->name, "%s", name);
			memcpy(s->want, v, sizeof s->want);
		}
	}
	free(text);
	for (size_t i = 0; i < e->nfuncs; i++)
		for (size_t k = 0; k < e->nsites; k++)
			if (!strcmp(e->funcs[i].name, e->sites[k].name))
				e->funcs[i].site = (int)k;
	return e->text_lo && e->nfuncs && e->nsites ? 0 : -1;
}

/* The function containing address a, or NULL when a is outside the text. */
static const struct func *func_at(const struct expect *e, uint64_t a)
{
	const struct func *best = NULL;
	if (a < e->text_lo || a >= e->text_hi)
		return NULL;
	for (size_t i = 0; i < e->nfuncs; i++)
		if (e->funcs[i].addr <= a && (!best || e->funcs[i].addr > best->addr))
			best = &e->funcs[i];
	return best;
}

/* Site index of a sample (its innermost own frame), or -1. */
static int sample_site(const ap_profile *p, const ap_sample *s,
		       const struct expect *e)
{
	for (size_t i = 0; i < s->nlocations; i++) {
		const ap_location *loc = ap_profile_location(p, s->location_ids[i]);
		if (!loc)
			return -1;
		const struct func *f = func_at(e, loc->address);
		if (f)
			return f->site;
	}
	return -1;
}

/* The name of the object of s's frame i ("" when unknown). */
static const char *frame_object(const ap_profile *p, const ap_sample *s, size_t i)
{
	const ap_location *loc = ap_profile_location(p, s->location_ids[i]);
	const ap_mapping *m = loc ? ap_profile_mapping(p, loc->mapping_id) : NULL;
	return m ? ap_profile_string(p, m->filename) : "";
}

/* Was s allocated by the runtime on its own account? Its frames are
 * dropped at the leaf; one further up is either the runtime standing in
 * for a C++ operator the program called (operator new throwing bad_alloc:
 * the program's own exception, the program's frames further out) or an
 * allocation the runtime made itself, called from nothing of the
 * program's (its dlsym lookups' error messages were, over glibc). */
static bool made_by_runtime(const ap_profile *p, const ap_sample *s)
{
	size_t n = s->nlocations, r = n;
	for (size_t i = 0; i < n; i++)
		if (strstr(frame_object(p, s, i), "liballocprof_preload"))
			r = i; /* leaf first: the outermost one wins */
	if (r == n)
		return false;
	for (size_t i = r + 1; i < n; i++)
		if (strstr(frame_object(p, s, i), exact_prog))
			return false;
	return true;
}

/* Paths of the profiles in dir ("*.pb.gz"), sorted; returns the count. */
static size_t list_profiles(const char *dir, char paths[][4096], size_t max)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	if (!d)
		return 0;
	for (struct dirent *de; (de = readdir(d)) && n < max;) {
		size_t l = strlen(de->d_name);
		if (l > 6 && !strcmp(de->d_name + l - 6, ".pb.gz"))
			snprintf(paths[n++], 4096, "%s/%s", dir, de->d_name);
	}
	closedir(d);
	return n;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		char path[4096];
		for (struct dirent *de; (de = readdir(d));) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

static ap_profile *load(const char *path)
{
	size_t len;
	char err[256] = "";
	ap_profile *p = NULL;
	char *buf = read_all(path, &len);
	if (!buf)
		return NULL;
	int rc = ap_pprof_decode((const unsigned char *)buf, len, NULL, &p, err,
				 sizeof err);
	free(buf);
	if (rc)
		fprintf(stderr, "  %s: %s\n", path, err);
	return rc ? NULL : p;
}

/* Value of numeric label key in s, or -1. */
static int64_t label_num(const ap_profile *p, const ap_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(ap_profile_string(p, s->labels[i].key), key))
			return s->labels[i].num;
	return -1;
}

/*
 * At rate 1 a sample's "bytes" label is its site's average allocated size,
 * rounded: alloc space is alloc objects times the label within half a byte
 * per object. A site is a size class (sizes within 2^-4 of each other, see
 * src/preload/stack_table.h), so the in-use average may differ from the
 * allocated one by up to that class width.
 */
static bool label_agrees(int64_t aobj, int64_t aspace, int64_t iobj,
			 int64_t ispace, int64_t bytes)
{
	if (bytes < 0 || aobj <= 0)
		return false;
	if (2 * llabs(aspace - aobj * bytes) > aobj)
		return false;
	if (iobj == 0)
		return ispace == 0;
	double d = fabs((double)ispace - (double)iobj * (double)bytes);
	return d <= (double)iobj * ((double)bytes / 16.0 + 0.5);
}

/*
 * Add the profile's samples to the sites; with rate 1, check that each
 * sample's values agree with its "bytes" label. Returns the number of
 * samples attributed to a site, or -1 (with a message) on a bad profile.
 */
static long tally(const ap_profile *p, struct expect *e, bool rate1)
{
	int idx[4];
	long n = 0;
	for (int k = 0; k < 4; k++) {
		idx[k] = ap_profile_find_sample_type(p, kinds[k]);
		if (idx[k] < 0) {
			fprintf(stderr, "  sample type %s missing\n", kinds[k]);
			return -1;
		}
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const ap_sample *s = &p->samples[i];
		if (rate1 && made_by_runtime(p, s)) {
			fprintf(stderr, "  a sample made inside the runtime "
				"(its own lookups are not the program's)\n");
			return -1;
		}
		int site = sample_site(p, s, e);
		if (site < 0)
			continue;
		n++;
		int64_t bytes = label_num(p, s, "bytes");
		if (rate1 && !label_agrees(s->values[idx[0]], s->values[idx[1]],
					   s->values[idx[2]], s->values[idx[3]], bytes)) {
			fprintf(stderr, "  %s: sample values disagree with its "
				"bytes label %lld\n", e->sites[site].name,
				(long long)bytes);
			return -1;
		}
		for (int k = 0; k < 4; k++)
			e->sites[site].got[k] += s->values[idx[k]];
	}
	return n;
}

/* Print every site whose sums differ; true when all agree. */
static bool sites_match(const struct expect *e, const char *label)
{
	bool ok = true;
	for (size_t i = 0; i < e->nsites; i++) {
		const struct site *s = &e->sites[i];
		if (!memcmp(s->want, s->got, sizeof s->want))
			continue;
		ok = false;
		fprintf(stderr,
			"  %s %s: want alloc %lld obj %lld B, inuse %lld obj "
			"%lld B; got %lld %lld, %lld %lld\n",
			label, s->name, (long long)s->want[0],
			(long long)s->want[1], (long long)s->want[2],
			(long long)s->want[3], (long long)s->got[0],
			(long long)s->got[1], (long long)s->got[2],
			(long long)s->got[3]);
	}
	return ok;
}

struct run_result {
	int status;
	size_t nprofiles;
	long attributed;   /* samples attributed to sites, over all profiles */
	int bad_profiles;  /* profiles that failed to decode or tally */
	int64_t period;
};

/* Run, load every profile written, tally; dir is removed afterwards. */
static void run_and_tally(const char *options, const char *extra,
			  const char *arg1, const char *arg2, struct expect *e,
			  struct run_result *r, bool rate1)
{
	char dir[] = "/tmp/ap_run_exact.XXXXXX";
	char paths[MAX_PROFILES][4096];
	memset(r, 0, sizeof *r);
	memset(e, 0, sizeof *e);
	if (!mkdtemp(dir)) {
		r->status = -1;
		return;
	}
	r->status = run_program(dir, options, extra, arg1, arg2);
	if (r->status == 0 && parse_expect(dir, e) == 0) {
		r->nprofiles = list_profiles(dir, paths, MAX_PROFILES);
		for (size_t i = 0; i < r->nprofiles; i++) {
			ap_profile *p = load(paths[i]);
			long n = p ? tally(p, e, rate1) : -1;
			if (n < 0)
				r->bad_profiles++;
			else
				r->attributed += n;
			if (p && n > 0)
				r->period = p->period;
			ap_profile_destroy(p);
		}
	} else if (r->status == 0) {
		r->status = -2; /* no usable expectations */
	}
	remove_dir(dir);
}

/* A run that exited 0 and wrote want decodable profiles with site samples. */
static bool run_ok(const struct run_result *r, size_t want)
{
	if (r->status)
		fprintf(stderr, "  exact_allocs exited with status %d\n", r->status);
	else if (r->nprofiles != want)
		fprintf(stderr, "  %zu profiles written, want %zu\n", r->nprofiles,
			want);
	else if (r->bad_profiles)
		fprintf(stderr, "  %d profiles unreadable\n", r->bad_profiles);
	else if (r->attributed <= 0)
		fprintf(stderr, "  no sample attributed to a site\n");
	else
		return true;
	return false;
}

AP_TEST(rate1_reports_true_bytes_and_objects_per_site_in_both_views)
{
	struct expect e;
	struct run_result r;
	run_and_tally("rate=1,seed=1", NULL, NULL, NULL, &e, &r, true);
	AP_CHECK(run_ok(&r, 1));
	AP_CHECK_EQ_INT(r.period, 1);
	AP_CHECK(sites_match(&e, "glibc"));
}

AP_TEST(sample_table_thinning_keeps_rate1_exactness)
{
	/* A sample table with base rate 1: sizes below 2 MiB at rate 1
	 * (every allocation, exact) and from 2 MiB at rate 64, which the
	 * slow path realises by thinning (keep the first byte with 1/64,
	 * else search the rest at rate 64). For the 10 MiB blocks p = 1 -
	 * (63/64)^(10 MiB) is 1 in double precision, so their weight is 1
	 * and the whole profile must still be exact to the byte. */
	static const char table[] = "allocprof-sample-table 1\nbase 1\n"
				    "class 1 1\nclass 2097152 64\n";
	char path[] = "/tmp/ap_table.XXXXXX", opts[128];
	int fd = mkstemp(path);
	AP_CHECK(fd >= 0);
	if (fd < 0)
		return;
	ssize_t w = write(fd, table, sizeof table - 1);
	close(fd);
	AP_CHECK(w == (ssize_t)(sizeof table - 1));
	snprintf(opts, sizeof opts, "sample_table=%s,seed=6", path);
	struct expect e;
	struct run_result r;
	run_and_tally(opts, NULL, NULL, NULL, &e, &r, true);
	unlink(path);
	AP_CHECK(run_ok(&r, 1));
	AP_CHECK_EQ_INT(r.period, 1);
	AP_CHECK(sites_match(&e, "glibc"));
}

AP_TEST(rate1_heap_profile_has_go_sample_types_and_period_type)
{
	char dir[] = "/tmp/ap_run_exact.XXXXXX";
	char paths[MAX_PROFILES][4096];
	AP_CHECK(mkdtemp(dir) != NULL);
	int status = run_program(dir, "rate=1", NULL, NULL, NULL);
	size_t n = list_profiles(dir, paths, MAX_PROFILES);
	ap_profile *p = n == 1 ? load(paths[0]) : NULL;
	remove_dir(dir);
	AP_CHECK_EQ_INT(status, 0);
	AP_CHECK_EQ_U64(n, 1);
	AP_CHECK(p != NULL);
	bool ok = p->nsample_types >= 4;
	static const char *const units[4] = {"count", "bytes", "count", "bytes"};
	static const char *const go_order[4] = {AP_ST_ALLOC_OBJECTS,
						AP_ST_ALLOC_SPACE,
						AP_ST_INUSE_OBJECTS,
						AP_ST_INUSE_SPACE};
	for (size_t k = 0; ok && k < 4; k++)
		ok = !strcmp(ap_profile_string(p, p->sample_types[k].type),
			     go_order[k]) &&
		     !strcmp(ap_profile_string(p, p->sample_types[k].unit),
			     units[k]);
	bool period_ok =
		!strcmp(ap_profile_string(p, p->period_type.type), "space") &&
		!strcmp(ap_profile_string(p, p->period_type.unit), "bytes") &&
		p->period == 1;
	bool has_mapping = p->nmappings > 0;
	ap_profile_destroy(p);
	AP_CHECK_MSG(ok, "first four sample types are not Go's heap types");
	AP_CHECK_MSG(period_ok, "period type is not space/bytes with period 1");
	AP_CHECK_MSG(has_mapping, "profile has no mappings");
}

AP_TEST(rate1_child_after_fork_reports_exactly_in_its_own_profile)
{
	struct expect e;
	struct run_result r;
	run_and_tally("rate=1,seed=2,fork=follow", NULL, "--fork", NULL, &e, &r,
		      true);
	AP_CHECK(run_ok(&r, 2)); /* parent's and child's */
	AP_CHECK(sites_match(&e, "fork child"));
}

/*
 * Run the exact check with the allocator at path underneath (found by the
 * dynamic linker, ap_test_find_library; scripts/deps.sh installs all
 * three, so a missing one is reported as a skip, never a pass).
 */
static void check_with_allocator(const char *path, const char *soname)
{
	struct expect e;
	struct run_result r;
	run_and_tally("rate=1,seed=3", path, "--portable", NULL, &e, &r, true);
	AP_CHECK(run_ok(&r, 1));
	AP_CHECK(sites_match(&e, soname));
}

/* Run check(path, soname) with the allocator soname underneath, or report
 * a skip naming the Debian package when the dynamic linker cannot find it. */
#define WITH_ALLOCATOR(check, soname, package)                               \
	do {                                                                 \
		char path_[4096];                                            \
		if (ap_test_find_library(soname, path_, sizeof path_))       \
			AP_SKIP("%s not found by the dynamic linker "        \
				"(Debian package %s)", soname, package);     \
		check(path_, soname);                                        \
	} while (0)
#define CHECK_WITH_ALLOCATOR(soname, package)                                \
	WITH_ALLOCATOR(check_with_allocator, soname, package)

AP_TEST(rate1_exact_with_jemalloc_underneath)
{
	CHECK_WITH_ALLOCATOR("libjemalloc.so.2", "libjemalloc2");
}

AP_TEST(rate1_exact_with_tcmalloc_underneath)
{
	CHECK_WITH_ALLOCATOR("libtcmalloc_minimal.so.4",
			     "libtcmalloc-minimal4");
}

AP_TEST(rate1_exact_with_mimalloc_underneath)
{
	CHECK_WITH_ALLOCATOR("libmimalloc.so.2", "libmimalloc2.0");
}

AP_TEST(default_rate_estimates_huge_allocations_exactly)
{
	struct expect e;
	struct run_result r;
	run_and_tally("seed=4", NULL, NULL, NULL, &e, &r, false);
	AP_CHECK(run_ok(&r, 1));
	AP_CHECK_EQ_INT(r.period, 524288);
	const struct site *big = NULL;
	for (size_t i = 0; i < e.nsites; i++)
		if (!strcmp(e.sites[i].name, "site_big"))
			big = &e.sites[i];
	AP_CHECK(big != NULL);
	/* 10 MiB = 20 R: pi = 1 - (1 - 1/R)^Z, about 1 - 2e-9. The HT value
	 * want/pi exceeds want by a fraction (0.065 for the 30 MiB
	 * allocated), and the profile rounds it without bias: up with
	 * probability equal to the fraction. So each value is the floor or
	 * the ceiling of want/pi (one line per value: one stack, one size);
	 * insisting on want alone failed about one run in 15. */
	double pi = -expm1((double)(10u << 20) * log1p(-1.0 / 524288.0));
	for (int k = 0; k < 4; k++) {
		double ht = (double)big->want[k] / pi;
		AP_CHECK((double)big->got[k] == floor(ht) ||
			 (double)big->got[k] == ceil(ht));
	}
}

/* exact_cxx at rate 1, with the allocator at path (NULL: glibc) underneath. */
static void check_cxx(const char *path, const char *soname)
{
	struct expect e;
	struct run_result r;
	exact_prog = "exact_cxx";
	run_and_tally("rate=1,seed=5", path, NULL, NULL, &e, &r, true);
	exact_prog = "exact_allocs";
	AP_CHECK(run_ok(&r, 1));
	AP_CHECK(sites_match(&e, soname));
}

#define CHECK_CXX_WITH_ALLOCATOR(soname, package)                            \
	WITH_ALLOCATOR(check_cxx, soname, package)

AP_TEST(rate1_cxx_exact_over_glibc)
{
	check_cxx(NULL, "glibc");
}

AP_TEST(rate1_cxx_exact_over_jemalloc)
{
	CHECK_CXX_WITH_ALLOCATOR("libjemalloc.so.2", "libjemalloc2");
}

AP_TEST(rate1_cxx_exact_over_tcmalloc)
{
	CHECK_CXX_WITH_ALLOCATOR("libtcmalloc_minimal.so.4",
				 "libtcmalloc-minimal4");
}

AP_TEST(rate1_cxx_exact_over_mimalloc)
{
	CHECK_CXX_WITH_ALLOCATOR("libmimalloc.so.2", "libmimalloc2.0");
}
