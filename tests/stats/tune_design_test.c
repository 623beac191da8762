/*
 * tune_design_test.c: Monte Carlo validation of the tuned per-class design
 * (allocprof/tune.h, docs/STATISTICS.md "Optimal per-class sampling")
 * against today's per-byte design, both replayed through the real sampler
 * exactly as the runtime runs them (src/preload/sample_table_rt.c): the
 * fast path counts each allocation's size at the base rate, and the slow
 * path is ap_sampler_sample_at with the class's rate from the sample
 * table, which thins the base rate's samples; each sample is weighted by
 * the probability the sampler reports. The tuned table is what `allocprof
 * tune` writes: base rate R/4, class rates on the grid R/4 2^k
 * (ap_tune_table_rate). The two designs are compared at equal expected
 * sample counts: per-byte sampling runs at the integer rate whose
 * expected samples match the table's on the replayed workload.
 *
 * Trace: the worked example's workload (tests/stats/tune_workload.h),
 * 10^5 allocations, log2 size ~ N(8, 3), logistic survival (midpoint
 * 4 KiB), R = 64 KiB (about 3000 expected samples: enough for the normal
 * interval, small enough that large classes saturate). The tuned design
 * is optimised for in-use bytes with the floor of factor 4. Every replay
 * of the trace through a sampler is an independent draw of the sampling
 * (the gap is memoryless), NREP replays per design.
 *
 * Acceptance and tolerances:
 *  - unbiased: |mean(Y) - T| <= 4 SE, SE = sqrt(V / NREP), V the exact
 *    design variance; a correct design fails with probability 6e-5.
 *  - variance ratio: r = s2_pb / s2_tuned against the predicted
 *    V_pb / V_tuned. For NREP iid draws with kurtosis k, log s2 has
 *    variance (k - 1) / NREP to first order (the variance of a sample
 *    variance is (mu4 - sigma^4) / n); the two designs are independent,
 *    so SD(log r) = sqrt((k_pb - 1 + k_t - 1) / NREP), with k measured.
 *    Accept |log r - log r_pred| <= 4 SD(log r).
 *  - coverage of Y +- 1.96 sqrt(V_hat) >= 0.94: with NREP = 10^4 the SD
 *    of an observed coverage of 0.95 is 0.0022, so 0.94 is 4.5 SD below.
 *  - transfer: the table tuned on workload A, replayed on workload B
 *    (log2 size ~ N(10, 4), survival falling with size), stays unbiased,
 *    its variance ratios against per-byte match the prediction by the
 *    same test as above, coverage >= 0.94, and the predicted variance of
 *    each view is at most 4x per-byte's at R (the floor's bound; exact
 *    algebra, checked over several workloads in tests/unit/tune_test.c).
 */
#include "aptest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "allocprof/prng.h"
#include "allocprof/sampler.h"
#include "allocprof/tune.h"
#include "tune_workload.h"

#define NREP 10000
#define RATE 65536u
#define TOTAL 1e5

typedef struct trace {
	size_t n;
	unsigned char *cls;  /* class of each allocation */
	unsigned char *live; /* live at the dump */
	double t_alloc, t_inuse;
} trace;

/* One design: the sampler's base rate, each class's rate and probability. */
typedef struct design {
	uint64_t rate;
	uint64_t crate[TW_CLASSES];
	double p[TW_CLASSES];
} design;

/* Per view: sums over replays of Y, Y^2, Y^3, Y^4 about T, coverage. */
typedef struct view_stats {
	double sum, m[5];
	double covered;
} view_stats;

static int make_trace(const ap_tune_class *c, trace *t, uint64_t seed)
{
	ap_prng r;
	size_t k = 0;
	t->n = 0;
	for (int i = 0; i < TW_CLASSES; i++)
		t->n += (size_t)c[i].allocs;
	t->cls = malloc(t->n);
	t->live = malloc(t->n);
	if (!t->cls || !t->live || ap_prng_seed(&r, seed) != 0)
		return -1;
	t->t_alloc = t->t_inuse = 0;
	for (int i = 0; i < TW_CLASSES; i++)
		for (size_t j = 0; j < (size_t)c[i].allocs; j++, k++) {
			t->cls[k] = (unsigned char)i;
			t->live[k] = j < (size_t)c[i].live;
			t->t_alloc += c[i].size;
			t->t_inuse += t->live[k] ? c[i].size : 0;
		}
	for (size_t i = t->n - 1; i > 0; i--) { /* Fisher-Yates */
		size_t j = (size_t)ap_prng_below(&r, i + 1);
		unsigned char a = t->cls[i], b = t->live[i];
		t->cls[i] = t->cls[j];
		t->live[i] = t->live[j];
		t->cls[j] = a;
		t->live[j] = b;
	}
	return 0;
}

static double p_at(double z, uint64_t r)
{
	return r <= 1 ? 1.0 : -expm1(z * log1p(-1.0 / (double)r));
}

/* Per-byte sampling at the integer rate spending `samples` on c. */
static void design_perbyte(const ap_tune_class *c, double samples, design *d)
{
	d->rate = (uint64_t)nearbyint(ap_tune_perbyte_rate(c, TW_CLASSES, samples));
	for (int i = 0; i < TW_CLASSES; i++) {
		d->crate[i] = d->rate;
		d->p[i] = p_at(c[i].size, d->rate);
	}
}

/* The sample table for probabilities p on the classes c (floors in c). */
static void design_table(const ap_tune_class *c, const double *p, design *d)
{
	d->rate = RATE / 4;
	for (int i = 0; i < TW_CLASSES; i++) {
		d->crate[i] = ap_tune_table_rate(p[i], c[i].p_min, c[i].size, d->rate);
		d->p[i] = p_at(c[i].size, d->crate[i]);
	}
}

static void add(view_stats *v, double y, double vhat, double truth)
{
	double e = y - truth;
	v->sum += y;
	v->m[2] += e * e;
	v->m[4] += e * e * e * e;
	v->covered += fabs(e) <= 1.959963984540054 * sqrt(vhat);
}

/* NREP replays of t through design d; va, vi collect the two views. */
static int replay(const trace *t, const ap_tune_class *c, const design *d,
		  uint64_t seed, view_stats *va, view_stats *vi,
		  double *samples, int *pmismatch)
{
	ap_sampler s;
	ap_sampler_config cfg;
	ap_sampler_config_default(&cfg);
	cfg.rate = d->rate;
	cfg.seed = seed;
	if (ap_sampler_init(&s, &cfg) != 0)
		return -1;
	*samples = 0;
	for (int r = 0; r < NREP; r++) {
		double ya = 0, yi = 0, wa = 0, wi = 0;
		for (size_t k = 0; k < t->n; k++) {
			int ci = t->cls[k];
			double z = c[ci].size, p, term;
			ap_sample_info info;
			if (!ap_sampler_should_sample(&s, (size_t)z))
				continue;
			ap_sampler_sample_at(&s, (size_t)z, d->crate[ci], &info);
			if (info.count == 0)
				continue;
			p = info.prob; /* what the runtime weights by */
			*pmismatch += fabs(p / d->p[ci] - 1) > 1e-12;
			term = (1 - p) * z * z / (p * p);
			*samples += 1;
			ya += z / p;
			wa += term;
			if (t->live[k]) {
				yi += z / p;
				wi += term;
			}
		}
		add(va, ya, wa, t->t_alloc);
		add(vi, yi, wi, t->t_inuse);
	}
	*samples /= NREP;
	return 0;
}

/* Exact design variances of the two views for the trace's classes. */
static void predicted(const ap_tune_class *c, const design *d, double *va,
		      double *vi)
{
	ap_tune_var v;
	ap_tune_variance(c, TW_CLASSES, d->p, &v);
	*va = v.alloc;
	*vi = v.inuse;
}

static int check_mean(const char *what, const view_stats *v, double truth,
		      double var)
{
	double se = sqrt(var / NREP), mean = v->sum / NREP;
	printf("  %-22s mean %.6g truth %.6g (%+.2f SE)\n", what, mean,
	       truth, (mean - truth) / se);
	return fabs(mean - truth) <= 4 * se;
}

/* Kurtosis of the replays about the truth (mean known to be T). */
static double kurt(const view_stats *v)
{
	double m2 = v->m[2] / NREP;
	return v->m[4] / NREP / (m2 * m2);
}

static int check_ratio(const char *what, const view_stats *pb,
		       const view_stats *tu, double pred)
{
	double r = pb->m[2] / tu->m[2];
	double sd = sqrt((kurt(pb) - 1 + kurt(tu) - 1) / NREP);
	printf("  %-22s variance ratio per-byte/tuned %.4f, predicted %.4f "
	       "(%+.2f SD, SD(log r) %.4f)\n", what, r, pred,
	       (log(r) - log(pred)) / sd, sd);
	return fabs(log(r) - log(pred)) <= 4 * sd;
}

struct run {
	view_stats a, i;
	double va, vi, samples, expect, se_samples;
	int pmismatch;
};

static int run_design(const trace *t, const ap_tune_class *c,
		      const design *d, uint64_t seed, struct run *out)
{
	ap_tune_var v;
	*out = (struct run){0};
	predicted(c, d, &out->va, &out->vi);
	ap_tune_variance(c, TW_CLASSES, d->p, &v);
	out->expect = v.samples;
	for (int i = 0; i < TW_CLASSES; i++)
		out->se_samples += c[i].allocs * d->p[i] * (1 - d->p[i]);
	out->se_samples = sqrt(out->se_samples / NREP);
	return replay(t, c, d, seed, &out->a, &out->i, &out->samples,
		      &out->pmismatch);
}

/* The realised mean sample count is the design's expectation (4 SE), and
 * every sample carried the design's probability. */
static int check_samples(const char *what, const struct run *r)
{
	printf("  %-22s samples %.1f, expected %.1f (%+.2f SE)\n", what,
	       r->samples, r->expect, (r->samples - r->expect) / r->se_samples);
	return fabs(r->samples - r->expect) <= 4 * r->se_samples && r->pmismatch == 0;
}

/* As `allocprof tune --objective inuse` does: floors of factor 4 against
 * per-byte at RATE, ceilings from the table's base rate RATE/4, budget
 * per-byte's expected samples at RATE. */
static void build_tuned(ap_tune_class *a, double *p, double *budget)
{
	double pb[TW_CLASSES];
	ap_tune_var vb;
	ap_tune_weights w = {0, 1, 0};
	for (int i = 0; i < TW_CLASSES; i++) {
		a[i].p_min = ap_tune_floor(a[i].size, RATE, 4);
		a[i].p_max = p_at(a[i].size, RATE / 4);
	}
	ap_tune_perbyte(a, TW_CLASSES, RATE, pb);
	ap_tune_variance(a, TW_CLASSES, pb, &vb);
	*budget = vb.samples;
	ap_tune_solve(a, TW_CLASSES, &w, vb.samples, 0, p, NULL, NULL);
}

/*
 * Replay workload w's trace (seed ts) through the table for p (trained
 * on the classes a) and through per-byte sampling at the same expected
 * sample count on w (seeds ss + 1, ss). Returns -1 on setup failure.
 */
static int compare(const ap_tune_class *a, const ap_tune_class *w,
		   const double *p, uint64_t ts, uint64_t ss, trace *t,
		   struct run *rb, struct run *rt)
{
	design db, dt;
	ap_tune_var v;
	design_table(a, p, &dt);
	ap_tune_variance(w, TW_CLASSES, dt.p, &v);
	design_perbyte(w, v.samples, &db);
	printf("  table: base rate %llu, per-byte at the same samples: rate %llu\n",
	       (unsigned long long)dt.rate, (unsigned long long)db.rate);
	if (make_trace(w, t, ts) != 0 || run_design(t, w, &db, ss, rb) != 0 ||
	    run_design(t, w, &dt, ss + 1, rt) != 0)
		return -1;
	return 0;
}

AP_TEST(tuned_design_on_its_training_workload)
{
	ap_tune_class a[TW_CLASSES];
	double p[TW_CLASSES], budget;
	trace t;
	struct run rb, rt;
	tw_build(a, 8, 3, TOTAL, TW_LOGISTIC);
	build_tuned(a, p, &budget);
	AP_CHECK(compare(a, a, p, 11, 21, &t, &rb, &rt) == 0);
	printf("  budget %.1f\n", budget);
	AP_CHECK(check_samples("per-byte", &rb));
	AP_CHECK(check_samples("tuned", &rt));
	AP_CHECK(check_mean("per-byte alloc", &rb.a, t.t_alloc, rb.va));
	AP_CHECK(check_mean("per-byte in-use", &rb.i, t.t_inuse, rb.vi));
	AP_CHECK(check_mean("tuned alloc", &rt.a, t.t_alloc, rt.va));
	AP_CHECK(check_mean("tuned in-use", &rt.i, t.t_inuse, rt.vi));
	AP_CHECK(check_ratio("in-use", &rb.i, &rt.i, rb.vi / rt.vi));
	AP_CHECK(check_ratio("alloc", &rb.a, &rt.a, rb.va / rt.va));
	printf("  coverage per-byte %.4f %.4f, tuned %.4f %.4f (alloc, in-use)\n",
	       rb.a.covered / NREP, rb.i.covered / NREP, rt.a.covered / NREP,
	       rt.i.covered / NREP);
	AP_CHECK(rb.a.covered >= 0.94 * NREP && rb.i.covered >= 0.94 * NREP);
	AP_CHECK(rt.a.covered >= 0.94 * NREP && rt.i.covered >= 0.94 * NREP);
	free(t.cls);
	free(t.live);
}

AP_TEST(tuned_on_one_workload_tested_on_another)
{
	ap_tune_class a[TW_CLASSES], b[TW_CLASSES];
	double p[TW_CLASSES], budget;
	trace t;
	struct run rb, rt;
	tw_build(a, 8, 3, TOTAL, TW_LOGISTIC);
	build_tuned(a, p, &budget);
	tw_build(b, 10, 4, TOTAL, TW_FALLING);
	AP_CHECK(compare(a, b, p, 12, 31, &t, &rb, &rt) == 0);
	printf("  workload B: predicted variance tuned/per-byte alloc %.3f "
	       "in-use %.3f\n", rt.va / rb.va, rt.vi / rb.vi);
	AP_CHECK(check_samples("B per-byte", &rb));
	AP_CHECK(check_samples("B tuned", &rt));
	/* The floor's bound holds against per-byte at RATE on any workload. */
	{
		double pr[TW_CLASSES];
		ap_tune_var vr, vt;
		design dt;
		ap_tune_perbyte(b, TW_CLASSES, RATE, pr);
		ap_tune_variance(b, TW_CLASSES, pr, &vr);
		design_table(a, p, &dt);
		ap_tune_variance(b, TW_CLASSES, dt.p, &vt);
		AP_CHECK(vt.alloc <= 4 * vr.alloc && vt.inuse <= 4 * vr.inuse &&
			 vt.objects <= 4 * vr.objects);
	}
	AP_CHECK(check_mean("B tuned alloc", &rt.a, t.t_alloc, rt.va));
	AP_CHECK(check_mean("B tuned in-use", &rt.i, t.t_inuse, rt.vi));
	AP_CHECK(check_ratio("B in-use", &rb.i, &rt.i, rb.vi / rt.vi));
	AP_CHECK(check_ratio("B alloc", &rb.a, &rt.a, rb.va / rt.va));
	printf("  B coverage tuned %.4f %.4f (alloc, in-use)\n",
	       rt.a.covered / NREP, rt.i.covered / NREP);
	AP_CHECK(rt.a.covered >= 0.94 * NREP && rt.i.covered >= 0.94 * NREP);
	free(t.cls);
	free(t.live);
}
