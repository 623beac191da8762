/*
 * diff_null_test.c: Monte Carlo check of allocprof diff's significance
 * marker. Profiles of one synthetic program (40 allocation sites, fixed
 * allocation streams) are drawn with the real per-byte sampler
 * (allocprof/sampler.h) under different seeds, built with the profile
 * builder exactly as the runtime fills them (HT values, samples, u,
 * variances), written as gzip'd pprof, and compared by the real CLI
 * (`allocprof diff --alloc --json`).
 *
 * Null: BASE and NEW are two independent runs of the same program, so every
 * true change is 0 and a site is flagged significant exactly when its 95%
 * interval misses the truth. Over REPS replications:
 *  - sites with many samples (normal method) are flagged at ~5%: with n =
 *    20 * REPS comparisons, X ~ Binomial(n, 0.05), mean 0.05 n and sd
 *    sqrt(0.05 * 0.95 * n); we accept mean +- 3.5 sd (two-sided: too few
 *    false alarms would mean intervals inflated beyond their level);
 *  - sites with few samples (combined exact method, conservative by
 *    construction) at most mean + 3.5 sd;
 *  - the total line (one per replication): at most 8 of 60 (P = 0.006
 *    under Binomial(60, 0.05)).
 * Alternative: NEW doubles one many-sample site's allocations (a change of
 * 30 MB against a difference sd of ~2.4 MB, z ~ 12): flagged in every
 * replication, and its change interval misses the true change in at most 2
 * of 5 (P(>= 3 misses) ~ 0.001 under Binomial(5, 0.05)).
 * The sites' comparisons are independent: per-byte sampling makes the
 * samples of disjoint allocations independent whatever the seed stream.
 *
 * Issue 12 moves diff to per-site p-values (allocprof/difftest.h: Wald for
 * many-sample sites, the exact conditional test for few-sample ones) and
 * flags by Benjamini-Hochberg q-values. This test reads whichever the
 * command prints: with a "p" per site it counts p <= 0.05 as the per-site
 * false alarm (the same Binomial(n, 0.05) band: Wald is calibrated, the
 * conditional test conservative) and additionally checks that the
 * q-value flag is rarer than the per-site one; without it (the rule before
 * the wiring) the "significant" flag of the intersected intervals. Method
 * names of both are accepted: many-sample sites "normal" or "wald",
 * few-sample ones "combined", "conditional" or "split".
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocprof/estimate.h"
#include "allocprof/profile.h"
#include "allocprof/sampler.h"
#include "aptest.h"

enum { NMANY = 20, NFEW = 20, NSITES = NMANY + NFEW, REPS = 60, ALT_REPS = 5 };
#define RATE 65536

/* Site s: its allocation size and count. Many-sample sites allocate ~30 MB
 * (~470 samples at R = 64 KiB, far above AP_NB_MAX_SAMPLES); few-sample
 * ones ~260 KB (~4 samples). */
static void site_stream(int s, uint64_t *size, uint64_t *count)
{
	static const uint64_t sizes[] = {24, 256, 1024, 4096, 100};
	*size = sizes[s % 5];
	if (s < NMANY)
		*count = 30720000 / *size;
	else
		*count = 262144 / *size;
}

/*
 * Per-site sums, as the runtime accumulates them, in the library's
 * ap_heap_sums: the profile's values come from ap_heap_sums_encode, the
 * call the runtime makes, so the layout checked is the one it writes.
 */
typedef ap_heap_sums acc;

static int build_profile(const acc *a, uint64_t rate, ap_profile **out)
{
	ap_profile *p;
	if (ap_profile_create(NULL, &p))
		return -1;
	if (ap_profile_init_heap(p, (int64_t)rate))
		goto fail;
	ap_mapping m = {.memory_start = 0x400000, .memory_limit = 0x800000,
			.filename = ap_profile_intern(p, "/synthetic/prog"),
			.has_functions = true, .has_filenames = true,
			.has_line_numbers = true};
	uint64_t mid, main_loc;
	ap_function fmain = {.name = ap_profile_intern(p, "main"),
			     .filename = ap_profile_intern(p, "prog.c")};
	uint64_t fid;
	if (ap_profile_add_mapping(p, &m, &mid) ||
	    ap_profile_add_function(p, &fmain, &fid))
		goto fail;
	ap_line ml = {.function_id = fid, .line = 5};
	ap_location lmain = {.mapping_id = mid, .address = 0x400100,
			     .lines = &ml, .nlines = 1};
	if (ap_profile_add_location(p, &lmain, &main_loc))
		goto fail;
	int64_t k_bytes = ap_profile_intern(p, "bytes");
	for (int s = 0; s < NSITES; s++) {
		if (a[s].samples == 0)
			continue;
		char name[32];
		snprintf(name, sizeof name, "site_%02d", s);
		ap_function f = {.name = ap_profile_intern(p, name),
				 .filename = fmain.filename};
		if (ap_profile_add_function(p, &f, &fid))
			goto fail;
		ap_line ln = {.function_id = fid, .line = 100 + s};
		ap_location loc = {.mapping_id = mid,
				   .address = 0x401000 + 16 * (uint64_t)s,
				   .lines = &ln, .nlines = 1};
		uint64_t locs[2];
		locs[1] = main_loc;
		if (ap_profile_add_location(p, &loc, &locs[0]))
			goto fail;
		int64_t v[AP_HEAP_NVALUES];
		/* Everything is still live: inuse = alloc. */
		ap_heap_sums_encode(&a[s], &a[s], rate,
				    ap_round_key(NULL, 0, (uint32_t)s), v);
		uint64_t size, count;
		site_stream(s, &size, &count);
		ap_label lb = {.key = k_bytes, .num = (int64_t)size};
		if (ap_profile_add_sample(p, locs, 2, v, &lb, 1))
			goto fail;
	}
	*out = p;
	return 0;
fail:
	ap_profile_destroy(p);
	return -1;
}

/* One run of the program at sampling rate `rate`; site `doubled` (or -1)
 * allocates twice as much. */
static int run_program(uint64_t seed, uint64_t rate, int doubled,
		       const char *path)
{
	ap_sampler_config c;
	ap_sampler_config_default(&c);
	c.rate = rate;
	c.seed = seed;
	ap_sampler smp;
	if (ap_sampler_init(&smp, &c))
		return -1;
	acc a[NSITES];
	memset(a, 0, sizeof a);
	for (int s = 0; s < NSITES; s++) {
		uint64_t size, count;
		site_stream(s, &size, &count);
		if (s == doubled)
			count *= 2;
		for (uint64_t i = 0; i < count; i++) {
			if (!ap_sampler_should_sample(&smp, size))
				continue;
			ap_sample_info info;
			ap_sampler_sample(&smp, size, &info);
			double pi = info.prob, z = (double)size;
			a[s].objects += 1 / pi;
			a[s].space += z / pi;
			a[s].usable += z / pi;
			a[s].samples += 1;
			a[s].u += z - (double)info.offset;
			a[s].space_var += (1 - pi) * z * z / (pi * pi);
			a[s].objects_var += (1 - pi) / (pi * pi);
		}
	}
	ap_profile *p;
	if (build_profile(a, rate, &p))
		return -1;
	unsigned char *buf;
	size_t len;
	int rc = ap_pprof_encode(p, true, NULL, &buf, &len);
	ap_profile_destroy(p);
	if (rc)
		return -1;
	FILE *f = fopen(path, "wb");
	rc = f && fwrite(buf, 1, len, f) == len ? 0 : -1;
	if (f && fclose(f))
		rc = -1;
	free(buf);
	return rc;
}

struct site_result {
	bool present; /* in the diff (sampled in at least one run) */
	bool significant; /* the per-site false alarm (see the header) */
	bool flagged;     /* the command's own "significant" */
	bool combined;    /* a few-sample method */
	double lo, hi;
};

/* key's value inside [p, end), or NULL. */
static const char *within(const char *p, const char *end, const char *key)
{
	const char *q = strstr(p, key);
	return q && (!end || q < end) ? q + strlen(key) : NULL;
}

/* Pull one number or word after key, starting at p. */
static const char *after(const char *p, const char *key)
{
	const char *q = strstr(p, key);
	return q ? q + strlen(key) : NULL;
}

/*
 * Run the CLI and read per-site results (indexed by site number) and the
 * total's flag. The JSON writer is compact and keys come in a fixed order:
 * each site object has "function", then change_lo/hi, "significant",
 * "method".
 */
static int diff_json(const char *base, const char *nw,
		     struct site_result res[NSITES], bool *total_sig)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "'%s/allocprof' diff --alloc --json '%s' '%s'",
		 ap_test_bindir(), base, nw);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	static char out[1 << 20];
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = 0;
	if (pclose(f) != 0)
		return -1;
	const char *sites = strstr(out, "\"sites\":[");
	const char *t = after(out, "\"total\":");
	if (!sites || !t || !(t = after(t, "\"significant\":")) || t > sites)
		return -1;
	*total_sig = !strncmp(t, "true", 4);
	memset(res, 0, NSITES * sizeof *res);
	for (const char *p = sites; (p = after(p, "\"function\":\"site_"));) {
		int s = atoi(p);
		const char *lo = after(p, "\"change_lo\":"),
			   *hi = after(p, "\"change_hi\":"),
			   *sg = after(p, "\"significant\":"),
			   *me = after(p, "\"method\":\"");
		if (s < 0 || s >= NSITES || !lo || !hi || !sg || !me)
			return -1;
		const char *next = strstr(p, "\"function\":\"site_");
		const char *pv = within(p, next, "\"p\":");
		res[s].lo = strtod(lo, NULL);
		res[s].hi = strtod(hi, NULL);
		res[s].present = true;
		res[s].flagged = !strncmp(sg, "true", 4);
		res[s].significant = pv ? strtod(pv, NULL) <= 0.05
					: res[s].flagged;
		res[s].combined = strncmp(me, "normal", 6) &&
				  strncmp(me, "wald", 4);
	}
	return 0;
}

/*
 * The binomial band of the header comment: over n = NMANY * reps
 * comparisons of many-sample sites, false alarms within 0.05 n +- 3.5 sd
 * (sd = sqrt(0.05 * 0.95 * n)); few-sample ones (conservative method) at
 * most the upper end. On failure, why says which.
 */
static bool false_alarms_ok(int many, int few, int reps, char *why, size_t n)
{
	double cmp = (double)NMANY * reps, mean = 0.05 * cmp,
	       band = 3.5 * sqrt(0.05 * 0.95 * cmp);
	if (many < mean - band || many > mean + band) {
		snprintf(why, n, "many-sample false alarms %d outside %g +- %g",
			 many, mean, band);
		return false;
	}
	if (few > mean + band) {
		snprintf(why, n, "few-sample false alarms %d above %g", few,
			 mean + band);
		return false;
	}
	return true;
}

static char dir[] = "/tmp/ap_diff_stats_XXXXXX";

AP_TEST(independent_runs_of_one_program_flag_about_5_percent)
{
	AP_CHECK(mkdtemp(dir));
	char base[64], nw[64];
	snprintf(base, sizeof base, "%s/base.pb.gz", dir);
	snprintf(nw, sizeof nw, "%s/new.pb.gz", dir);
	int fp_many = 0, fp_few = 0, fp_total = 0, combined_many = 0,
	    normal_few = 0, flagged = 0;
	for (int r = 0; r < REPS; r++) {
		AP_CHECK(run_program(1000 + 2 * (uint64_t)r, RATE, -1, base) == 0);
		AP_CHECK(run_program(1001 + 2 * (uint64_t)r, RATE, -1, nw) == 0);
		struct site_result res[NSITES];
		bool tsig;
		AP_CHECK_MSG(diff_json(base, nw, res, &tsig) == 0,
			     "allocprof diff failed in replication %d", r);
		for (int s = 0; s < NSITES; s++) {
			flagged += res[s].flagged;
			if (s < NMANY) {
				fp_many += res[s].significant;
				combined_many += !res[s].present || res[s].combined;
			} else {
				fp_few += res[s].significant;
				normal_few += res[s].present && !res[s].combined;
			}
		}
		fp_total += tsig;
	}
	unlink(base);
	unlink(nw);
	rmdir(dir);
	printf("# false alarms: many-sample %d/%d, few-sample %d/%d, total "
	       "%d/%d\n",
	       fp_many, NMANY * REPS, fp_few, NFEW * REPS, fp_total, REPS);
	/* The design puts many-sample sites in the normal regime (>= 100
	 * samples) and few-sample ones in the combined one. */
	AP_CHECK_EQ_INT(combined_many, 0);
	AP_CHECK_EQ_INT(normal_few, 0);
	char why[128];
	AP_CHECK_MSG(false_alarms_ok(fp_many, fp_few, REPS, why, sizeof why),
		     "%s", why);
	AP_CHECK_MSG(fp_total <= 8, "total flagged in %d of %d", fp_total, REPS);
	/* q-values (or the per-site flag itself before the wiring) never
	 * flag more than the per-site tests. */
	AP_CHECK(flagged <= fp_many + fp_few);
}

AP_TEST(a_doubled_site_is_flagged_and_its_change_covered)
{
	char d2[] = "/tmp/ap_diff_alt_XXXXXX";
	AP_CHECK(mkdtemp(d2));
	char base[64], nw[64];
	snprintf(base, sizeof base, "%s/base.pb.gz", d2);
	snprintf(nw, sizeof nw, "%s/new.pb.gz", d2);
	const int target = 2; /* 1024-byte allocations, 30000 of them */
	uint64_t size, count;
	site_stream(target, &size, &count);
	double truth = (double)(size * count);
	int flagged = 0, missed = 0;
	for (int r = 0; r < ALT_REPS; r++) {
		AP_CHECK(run_program(5000 + 2 * (uint64_t)r, RATE, -1, base) == 0);
		AP_CHECK(run_program(5001 + 2 * (uint64_t)r, RATE, target, nw) == 0);
		struct site_result res[NSITES];
		bool tsig;
		AP_CHECK(diff_json(base, nw, res, &tsig) == 0);
		flagged += res[target].significant && res[target].lo > 0;
		missed += !(res[target].lo <= truth && truth <= res[target].hi);
	}
	unlink(base);
	unlink(nw);
	rmdir(d2);
	printf("# doubled site: flagged %d/%d, interval missed the change %d/%d\n",
	       flagged, ALT_REPS, missed, ALT_REPS);
	AP_CHECK_EQ_INT(flagged, ALT_REPS);
	AP_CHECK(missed <= 2);
}

/*
 * The rate changed between the runs (BASE at R, NEW at R/4): each profile
 * carries its own period, intervals use each side's own rate, and the
 * false-alarm rate of many-sample sites stays at the level (same binomial
 * band as above, over 20 * MIXED_REPS comparisons); few-sample sites stay
 * under its upper end.
 */
AP_TEST(a_changed_sampling_rate_does_not_fake_changes)
{
	enum { MIXED_REPS = 30 };
	char d3[] = "/tmp/ap_diff_mixed_XXXXXX";
	AP_CHECK(mkdtemp(d3));
	char base[64], nw[64];
	snprintf(base, sizeof base, "%s/base.pb.gz", d3);
	snprintf(nw, sizeof nw, "%s/new.pb.gz", d3);
	int fp_many = 0, fp_few = 0;
	for (int r = 0; r < MIXED_REPS; r++) {
		AP_CHECK(run_program(9000 + 2 * (uint64_t)r, RATE, -1, base) == 0);
		AP_CHECK(run_program(9001 + 2 * (uint64_t)r, RATE / 4, -1, nw) == 0);
		struct site_result res[NSITES];
		bool tsig;
		AP_CHECK(diff_json(base, nw, res, &tsig) == 0);
		for (int s = 0; s < NSITES; s++)
			*(s < NMANY ? &fp_many : &fp_few) += res[s].significant;
	}
	unlink(base);
	unlink(nw);
	rmdir(d3);
	printf("# rates R vs R/4: false alarms many-sample %d/%d, few-sample "
	       "%d/%d\n", fp_many, NMANY * MIXED_REPS, fp_few, NFEW * MIXED_REPS);
	char why[128];
	AP_CHECK_MSG(false_alarms_ok(fp_many, fp_few, MIXED_REPS, why, sizeof why),
		     "%s", why);
}
