/*
 * tune_test.c: the optimal per-class sampling solver (allocprof/tune.h):
 * KKT conditions at the solution (with and without the memory
 * constraint), clipping at 1 and at the floors, budget >= sum N gives
 * p = 1, monotonicity in the budget, optimality against per-byte
 * sampling at equal expected samples, the floor's variance bound, the
 * virtual size and its fixed-point charge, bad input, and the worked
 * example of docs/STATISTICS.md ("Optimal per-class sampling"), whose
 * numbers this test prints and pins.
 *
 * Tolerances: the solver bisects to relative 1e-15 on the multipliers, so
 * the stationarity and complementary-slackness identities hold to ~1e-9
 * relative (they are checked at 1e-7); everything else is exact algebra.
 */
#include "aptest.h"

#include <math.h>
#include <stdio.h>

#include "allocprof/tune.h"
#include "../stats/tune_workload.h"

#define R_DEFAULT 524288.0

static double objective(const ap_tune_class *c, size_t n,
			const ap_tune_weights *w, const double *p)
{
	double f = 0;
	for (size_t i = 0; i < n; i++) {
		double a = ap_tune_coef(&c[i], w);
		if (a > 0)
			f += a * (1 - p[i]) / p[i];
	}
	return f;
}

/* KKT of min sum A(1-p)/p s.t. sum N p <= K, sum L Z p <= M, floors. */
static int kkt_ok(const ap_tune_class *c, size_t n, const ap_tune_weights *w,
		  double budget, double memory, const double *p, double lam,
		  double mu, char *why, size_t cap)
{
	double k = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		double a = ap_tune_coef(&c[i], w);
		double price = lam * c[i].allocs + mu * c[i].live * c[i].size;
		double grad = a / (p[i] * p[i]); /* -d objective / d p */
		k += c[i].allocs * p[i];
		m += c[i].live * c[i].size * p[i];
		if (c[i].allocs == 0 || a == 0)
			continue;
		if (p[i] < 1 && p[i] > c[i].p_min &&
		    fabs(grad - price) > 1e-7 * price) {
			snprintf(why, cap, "class %zu interior: %g != %g", i,
				 grad, price);
			return 0;
		}
		if (p[i] == 1 && grad < price * (1 - 1e-7)) {
			snprintf(why, cap, "class %zu at 1: %g < %g", i, grad,
				 price);
			return 0;
		}
		if (p[i] == c[i].p_min && p[i] < 1 &&
		    grad > price * (1 + 1e-7)) {
			snprintf(why, cap, "class %zu at floor: %g > %g", i,
				 grad, price);
			return 0;
		}
	}
	if (k > budget * (1 + 1e-9) || (lam > 0 && fabs(k - budget) > 1e-7 * budget)) {
		snprintf(why, cap, "budget %g used %g (lambda %g)", budget, k, lam);
		return 0;
	}
	if (memory > 0 && (m > memory * (1 + 1e-9) ||
			   (mu > 0 && fabs(m - memory) > 1e-7 * memory))) {
		snprintf(why, cap, "memory %g used %g (mu %g)", memory, m, mu);
		return 0;
	}
	return 1;
}

AP_TEST(kkt_holds_for_each_view_and_the_mix)
{
	ap_tune_class c[TW_CLASSES];
	double p[TW_CLASSES], pb[TW_CLASSES], lam, mu;
	ap_tune_var vb;
	ap_tune_weights ws[] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0},
				{1, 1, 1e9}};
	char why[160];
	tw_build(c, 8, 3, 1e7, TW_LOGISTIC);
	ap_tune_perbyte(c, TW_CLASSES, R_DEFAULT, pb);
	ap_tune_variance(c, TW_CLASSES, pb, &vb);
	for (size_t v = 0; v < sizeof ws / sizeof ws[0]; v++) {
		AP_CHECK_EQ_INT(ap_tune_solve(c, TW_CLASSES, &ws[v], vb.samples,
					      0, p, &lam, &mu), 0);
		AP_CHECK_MSG(kkt_ok(c, TW_CLASSES, &ws[v], vb.samples, 0, p,
				    lam, mu, why, sizeof why),
			     "view %zu: %s", v, why);
		AP_CHECK(lam > 0 && mu == 0);
		/* The optimum beats per-byte sampling at the same budget. */
		AP_CHECK(objective(c, TW_CLASSES, &ws[v], p) <=
			 objective(c, TW_CLASSES, &ws[v], pb) * (1 + 1e-12));
	}
}

AP_TEST(kkt_holds_with_memory_constraint_binding)
{
	ap_tune_class c[TW_CLASSES];
	double p[TW_CLASSES], lam, mu;
	ap_tune_var v0, v1;
	ap_tune_weights w = {1, 1, 0};
	char why[160];
	tw_build(c, 8, 3, 1e7, TW_LOGISTIC);
	AP_CHECK_EQ_INT(ap_tune_solve(c, TW_CLASSES, &w, 20000, 0, p, &lam, &mu), 0);
	ap_tune_variance(c, TW_CLASSES, p, &v0);
	/* Half the sampled live bytes of the unconstrained optimum. */
	AP_CHECK_EQ_INT(ap_tune_solve(c, TW_CLASSES, &w, 20000,
				      v0.live_bytes / 2, p, &lam, &mu), 0);
	ap_tune_variance(c, TW_CLASSES, p, &v1);
	AP_CHECK(mu > 0);
	AP_CHECK_MSG(kkt_ok(c, TW_CLASSES, &w, 20000, v0.live_bytes / 2, p,
			    lam, mu, why, sizeof why), "%s", why);
	AP_CHECK(v1.alloc + v1.inuse >= v0.alloc + v0.inuse);
	/* A memory limit above the unconstrained use is slack. */
	AP_CHECK_EQ_INT(ap_tune_solve(c, TW_CLASSES, &w, 20000,
				      v0.live_bytes * 2, p, &lam, &mu), 0);
	AP_CHECK(mu == 0);
}

AP_TEST(clipping_at_one_and_at_the_floor)
{
	/* One huge class takes p = 1; a tiny one sits on its floor. */
	ap_tune_class c[3] = {{1 << 24, 10, 0, 0, 0}, {64, 1e6, 0, 0.01, 0},
			      {1024, 1e5, 0, 0, 0}};
	ap_tune_weights w = {1, 0, 0};
	double p[3], lam, mu;
	char why[160];
	AP_CHECK_EQ_INT(ap_tune_solve(c, 3, &w, 10100, 0, p, &lam, &mu), 0);
	AP_CHECK(p[0] == 1);
	AP_CHECK(p[1] == 0.01);
	AP_CHECK(p[2] > 0 && p[2] < 1);
	AP_CHECK_MSG(kkt_ok(c, 3, &w, 10100, 0, p, lam, mu, why, sizeof why),
		     "%s", why);
	/* Floors above the budget: AP_ERANGE and p holds the floors. */
	c[1].p_min = 0.5;
	AP_CHECK_EQ_INT(ap_tune_solve(c, 3, &w, 10100, 0, p, &lam, &mu),
			AP_ERANGE);
	AP_CHECK(p[1] == 0.5);
}

AP_TEST(budget_covering_every_allocation_gives_one)
{
	ap_tune_class c[TW_CLASSES];
	double p[TW_CLASSES], lam, total = 0;
	ap_tune_weights w = {1, 1, 1};
	tw_build(c, 6, 2.5, 1e5, TW_LINEAR);
	for (int i = 0; i < TW_CLASSES; i++)
		total += c[i].allocs;
	AP_CHECK_EQ_INT(ap_tune_solve(c, TW_CLASSES, &w, total, 0, p, &lam, NULL), 0);
	for (int i = 0; i < TW_CLASSES; i++)
		AP_CHECK(p[i] == 1);
	AP_CHECK(lam == 0);
	AP_CHECK(ap_tune_perbyte_rate(c, TW_CLASSES, total) == 1);
}

AP_TEST(probabilities_rise_with_the_budget)
{
	ap_tune_class c[TW_CLASSES];
	double p0[TW_CLASSES], p1[TW_CLASSES], f0 = (double)INFINITY;
	ap_tune_weights w = {1, 1, 0};
	tw_build(c, 8, 3, 1e7, TW_LOGLIN);
	for (int i = 0; i < TW_CLASSES; i++)
		p0[i] = 0;
	for (double k = 100; k <= 1e6; k *= 3) {
		double f;
		AP_CHECK_EQ_INT(ap_tune_solve(c, TW_CLASSES, &w, k, 0, p1, NULL, NULL), 0);
		for (int i = 0; i < TW_CLASSES; i++) {
			AP_CHECK(p1[i] >= p0[i]);
			p0[i] = p1[i];
		}
		f = objective(c, TW_CLASSES, &w, p1);
		AP_CHECK(f <= f0);
		f0 = f;
	}
	/* Larger size within one view: larger p (A_c / N_c = Z^2 s). */
	w = (ap_tune_weights){1, 0, 0};
	AP_CHECK_EQ_INT(ap_tune_solve(c, TW_CLASSES, &w, 5000, 0, p1, NULL, NULL), 0);
	for (int i = 1; i < TW_CLASSES; i++)
		AP_CHECK(p1[i] >= p1[i - 1]);
}

AP_TEST(floor_bounds_the_loss_on_every_view_and_workload)
{
	/* Tune for in-use on one workload, evaluate on others. */
	ap_tune_class c[TW_CLASSES], t[TW_CLASSES];
	double p[TW_CLASSES], pb[TW_CLASSES];
	ap_tune_weights w = {0, 1, 0};
	ap_tune_var vb, vt;
	tw_build(c, 6, 2.5, 1e7, TW_STEP);
	for (int i = 0; i < TW_CLASSES; i++)
		c[i].p_min = ap_tune_floor(c[i].size, R_DEFAULT, 4);
	ap_tune_perbyte(c, TW_CLASSES, R_DEFAULT, pb);
	ap_tune_variance(c, TW_CLASSES, pb, &vb);
	AP_CHECK_EQ_INT(ap_tune_solve(c, TW_CLASSES, &w, vb.samples, 0, p, NULL, NULL), 0);
	for (tw_survival law = TW_LINEAR; law <= TW_FALLING; law++) {
		tw_build(t, 10, 4, 1e6, law);
		ap_tune_perbyte(t, TW_CLASSES, R_DEFAULT, pb);
		ap_tune_variance(t, TW_CLASSES, pb, &vb);
		ap_tune_variance(t, TW_CLASSES, p, &vt);
		AP_CHECK(vt.alloc <= 4 * vb.alloc * (1 + 1e-12));
		AP_CHECK(vt.inuse <= 4 * vb.inuse * (1 + 1e-12));
		AP_CHECK(vt.objects <= 4 * vb.objects * (1 + 1e-12));
	}
	AP_CHECK(isnan(ap_tune_floor(64, R_DEFAULT, 0.5)));
	AP_CHECK(ap_tune_floor(64, 1, 4) == 1);
}

AP_TEST(virtual_size_realises_p)
{
	double R = R_DEFAULT;
	double ps[] = {1e-9, 1.0 / (4 * R), 1e-4, 0.3, 0.999};
	uint64_t units;
	double preal;
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
		double g = ap_tune_virtual_size(ps[i], R);
		AP_CHECK_NEAR(-expm1(g * log1p(-1 / R)), ps[i], 1e-12, 0);
		AP_CHECK_EQ_INT(ap_tune_gap_units(ps[i], R, 16, &units, &preal), 0);
		/* Rounding g 2^16 to an integer moves p by at most half a
		 * unit: relative 0.5 / (g 2^16) for small p (plus 1 unit
		 * below g = 2^-16). */
		AP_CHECK_NEAR(preal, ps[i], 0.5 / (g * 65536) + 1e-12, 0);
		AP_CHECK_NEAR(ap_tune_effective_rate(64, ps[i], R), R * 64 / g,
			      1e-15, 0);
	}
	/* The per-byte probability is realised by g = Z exactly. */
	AP_CHECK_NEAR(ap_tune_virtual_size(-expm1(100 * log1p(-1 / R)), R),
		      100, 1e-9, 0);
	AP_CHECK(isinf(ap_tune_virtual_size(1, R)));
	AP_CHECK(ap_tune_effective_rate(64, 1, R) == 1);
	AP_CHECK(isnan(ap_tune_virtual_size(1.5, R)));
	AP_CHECK_EQ_INT(ap_tune_gap_units(0, R, 16, &units, &preal), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_tune_gap_units(0.5, R, 17, &units, &preal), AP_EINVAL);
}

AP_TEST(bad_input_is_refused)
{
	ap_tune_class c[2] = {{64, 10, 2, 0, 0}, {128, 5, 1, 0, 0}};
	ap_tune_weights w = {1, 0, 0}, w0 = {0, 0, 0};
	double p[2];
	AP_CHECK_EQ_INT(ap_tune_solve(NULL, 2, &w, 3, 0, p, NULL, NULL), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_tune_solve(c, 0, &w, 3, 0, p, NULL, NULL), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_tune_solve(c, 2, &w0, 3, 0, p, NULL, NULL), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_tune_solve(c, 2, &w, (double)NAN, 0, p, NULL, NULL), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_tune_solve(c, 2, &w, 3, -1, p, NULL, NULL), AP_EINVAL);
	c[1].live = 6; /* more live than allocated */
	AP_CHECK_EQ_INT(ap_tune_solve(c, 2, &w, 3, 0, p, NULL, NULL), AP_EINVAL);
	c[1].live = 1;
	c[0].size = 0;
	AP_CHECK_EQ_INT(ap_tune_solve(c, 2, &w, 3, 0, p, NULL, NULL), AP_EINVAL);
	AP_CHECK(isnan(ap_tune_perbyte_rate(c, 2, 3)));
}

/*
 * The worked example (docs/STATISTICS.md): per-byte sampling at the
 * default R against the optimum at the same expected sample count, for
 * in-use-only and alloc-only objectives. Pinned to 3 digits; the
 * small-object closed form E_b[s] / E_b[sqrt s]^2 is checked where the
 * sizes are far below R.
 */
static void example(double mu, double sd, tw_survival law, double *alloc_gain,
		    double *inuse_gain, double *closed)
{
	ap_tune_class c[TW_CLASSES];
	double p[TW_CLASSES], pb[TW_CLASSES], eb = 0, es = 0, er = 0;
	ap_tune_weights wa = {1, 0, 0}, wi = {0, 1, 0};
	ap_tune_var vb, vt;
	tw_build(c, mu, sd, 1e7, law);
	for (int i = 0; i < TW_CLASSES; i++) {
		double b = c[i].allocs * c[i].size;
		double s = c[i].allocs > 0 ? c[i].live / c[i].allocs : 0;
		eb += b;
		es += b * s;
		er += b * sqrt(s);
	}
	*closed = es * eb / (er * er);
	ap_tune_perbyte(c, TW_CLASSES, R_DEFAULT, pb);
	ap_tune_variance(c, TW_CLASSES, pb, &vb);
	ap_tune_solve(c, TW_CLASSES, &wa, vb.samples, 0, p, NULL, NULL);
	ap_tune_variance(c, TW_CLASSES, p, &vt);
	*alloc_gain = vb.alloc / vt.alloc;
	ap_tune_solve(c, TW_CLASSES, &wi, vb.samples, 0, p, NULL, NULL);
	ap_tune_variance(c, TW_CLASSES, p, &vt);
	*inuse_gain = vb.inuse / vt.inuse;
	printf("  mu %4.1f sd %.1f law %d: alloc gain %.4f, in-use gain %.4f "
	       "(closed form %.4f)\n", mu, sd, (int)law, *alloc_gain,
	       *inuse_gain, *closed);
}

AP_TEST(worked_example_numbers)
{
	double a, i, cf;
	example(6, 2.5, TW_LINEAR, &a, &i, &cf);
	AP_CHECK_NEAR(a, 1.0003, 1e-3, 0);
	AP_CHECK_NEAR(i, 1.0441, 1e-3, 0);
	AP_CHECK_NEAR(i, cf, 0.01, 0);
	example(6, 2.5, TW_LOGLIN, &a, &i, &cf);
	AP_CHECK_NEAR(i, 1.3736, 1e-3, 0);
	example(6, 2.5, TW_LOGISTIC, &a, &i, &cf);
	AP_CHECK_NEAR(i, 1.8215, 1e-3, 0);
	example(6, 2.5, TW_STEP, &a, &i, &cf);
	AP_CHECK_NEAR(i, 3.4461, 1e-3, 0);
	example(10, 4, TW_LINEAR, &a, &i, &cf);
	AP_CHECK_NEAR(a, 1.0945, 1e-3, 0);
}

AP_TEST(ceilings_clip_and_keep_the_budget)
{
	/* The huge class wants p = 1; a ceiling of 0.5 (a sample table's base
	 * rate) holds it there and the budget goes to the others: stationarity
	 * for the free classes, the ceiling binding with A/p^2 above the
	 * price, and the budget spent exactly. */
	ap_tune_class c[3] = {{1 << 24, 10, 0, 0, 0.5}, {64, 1e6, 0, 1e-4, 0},
			      {1024, 1e5, 0, 0, 0}};
	ap_tune_weights w = {1, 0, 0};
	double p[3], lam;
	AP_CHECK(ap_tune_solve(c, 3, &w, 2000, 0, p, &lam, NULL) == 0);
	AP_CHECK(p[0] == 0.5);
	double k = 0;
	for (int i = 0; i < 3; i++)
		k += c[i].allocs * p[i];
	AP_CHECK(fabs(k - 2000) <= 1e-6 * 2000);
	for (int i = 1; i < 3; i++) {
		double a = ap_tune_coef(&c[i], &w);
		AP_CHECK(fabs(a / (p[i] * p[i]) / (lam * c[i].allocs) - 1) <= 1e-7);
	}
	AP_CHECK(ap_tune_coef(&c[0], &w) / 0.25 > lam * c[0].allocs);
	c[1].p_max = 5e-5; /* below the floor */
	AP_CHECK(ap_tune_solve(c, 3, &w, 2000, 0, p, NULL, NULL) == AP_EINVAL);
}

AP_TEST(class_rates_invert_the_per_byte_probability)
{
	double sizes[] = {1, 100, 1e6}, ps[] = {1e-6, 0.01, 0.5, 0.999};
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++) {
			double r = ap_tune_class_rate(ps[j], sizes[i]);
			double back = -expm1(sizes[i] * log1p(-1 / r));
			AP_CHECK_MSG(fabs(back / ps[j] - 1) <= 1e-9, "Z %g p %g: R %g gives %g",
				     sizes[i], ps[j], r, back);
		}
	AP_CHECK(ap_tune_class_rate(1, 10) == 1);
	AP_CHECK(isinf(ap_tune_class_rate(0, 10)));
	AP_CHECK(isnan(ap_tune_class_rate(1.5, 10)));
	/* Table rates: the nearest power-of-two multiple of the base in log
	 * scale, never below the base. R = 100 / 0.01 ~ 9950 -> 8192 (log2
	 * ratio 1.28 from 4096 rounds to 1 over 4096); 3 * 4096 -> 16384
	 * (log2 3 = 1.58 rounds up); anything at or below the base -> base. */
	AP_CHECK_EQ_U64(ap_tune_table_rate(0.01, 0, 100, 4096), 8192);
	AP_CHECK_EQ_U64(ap_tune_table_rate(-expm1(100 * log1p(-1.0 / 12288)), 0, 100,
					   4096), 16384);
	AP_CHECK_EQ_U64(ap_tune_table_rate(0.9, 0, 100, 4096), 4096);
	AP_CHECK_EQ_U64(ap_tune_table_rate(0, 0, 100, 4096), (uint64_t)1 << 52);
	AP_CHECK_EQ_U64(ap_tune_table_rate(0.5, 0, 100, 0), 0);
	/* The floor wins over rounding: 3 * 4096 would round up to 16384,
	 * whose probability is below a floor at rate 12288's. */
	double p3 = -expm1(100 * log1p(-1.0 / 12288));
	AP_CHECK_EQ_U64(ap_tune_table_rate(p3, p3, 100, 4096), 8192);
}
