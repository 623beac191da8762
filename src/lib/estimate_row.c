/*
 * estimate_row.c: the one rule every view (report, JSON, metrics, diff,
 * merge) uses to put an interval on a row's bytes and objects, and the
 * helpers the writer needs so the values it stores carry no rounding bias
 * (docs/STATISTICS.md sections 5 and 7).
 *
 * The rule looks at where the uncertainty is, not at how many samples
 * there are: the effective sample size ESS = (sum v_i)^2 / sum v_i^2 of the
 * per-sample HT variance terms v_i, and how many "R-sized events" the
 * variance amounts to (var / R^2). A row of a hundred near-certain large
 * objects and two small-object samples has 102 samples but an ESS of ~2:
 * the normal interval there covered 0.63-0.91 instead of 0.95. Such rows
 * are split into a certain part and a gamma interval on the rest.
 *
 * Pure functions, thread-safe, never abort.
 */
#include "allocprof/estimate.h"

#include <math.h>

#include "hash.h"
#include "specfun.h"

static bool finite_nonneg(double v)
{
	return v >= 0 && isfinite(v);
}

static void set_nan(ap_interval *out)
{
	if (out)
		out->estimate = out->lo = out->hi = (double)NAN;
}

int ap_sample_terms_of(double size, double prob, ap_sample_terms *out)
{
	if (!out)
		return AP_EINVAL;
	*out = (ap_sample_terms){0};
	if (!finite_nonneg(size) || !(prob > 0) || !(prob <= 1))
		return AP_EINVAL;
	double w = 1.0 / prob, vo = (1.0 - prob) * w * w;
	out->objects = w;
	out->bytes = size * w;
	out->var_objects = vo;
	out->var_bytes = size * size * vo;
	out->var2_objects = vo * vo;
	out->var2_bytes = out->var_bytes * out->var_bytes;
	out->exact = prob == 1;
	return 0;
}

double ap_var2_encode(double var2, double rate)
{
	if (!(rate >= 1) || !isfinite(rate))
		return (double)NAN;
	double r2 = rate * rate;
	return var2 / (r2 * r2) * AP_VAR2_SCALE;
}

double ap_var2_decode(double stored, double rate)
{
	if (!(rate >= 1) || !isfinite(rate))
		return (double)NAN;
	double r2 = rate * rate;
	return stored / AP_VAR2_SCALE * (r2 * r2);
}

double ap_ess(double var, double var2)
{
	if (!finite_nonneg(var) || !finite_nonneg(var2))
		return (double)NAN;
	if (var == 0)
		return 0;
	if (var2 == 0)
		return (double)NAN;
	return var / var2 * var;
}

bool ap_row_is_exact(uint64_t samples, uint64_t exact_samples)
{
	return samples > 0 && exact_samples == samples;
}

double ap_coarsest_rate(const double *rates, size_t n)
{
	if (!rates || n == 0)
		return 0;
	double m = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(rates[i] >= 1) || !isfinite(rates[i]))
			return 0;
		m = fmax(m, rates[i]);
	}
	return m;
}

/* log(1 - level) / log1p(-1/R): the most bytes that leave no sample with
 * probability >= 1 - level. 0 at R = 1. */
static double hidden_bytes(double rate, double level)
{
	if (rate == 1)
		return 0;
	return log1p(-level) / log1p(-1.0 / rate);
}

int ap_zero_sample_bound(double rate, double level, uint64_t z_min,
			 double *bytes_hi, double *objects_hi)
{
	if (bytes_hi)
		*bytes_hi = (double)NAN;
	if (objects_hi)
		*objects_hi = (double)NAN;
	if (!bytes_hi || !objects_hi || !(rate >= 1) || !isfinite(rate) ||
	    !(level > 0 && level < 1))
		return AP_EINVAL;
	double b = hidden_bytes(rate, level);
	*bytes_hi = b;
	if (b == 0)
		*objects_hi = 0;
	else
		*objects_hi = z_min ? b / (double)z_min : (double)INFINITY;
	return 0;
}

const char *ap_ci_method_name(ap_ci_method m)
{
	switch (m) {
	case AP_CI_NONE: return "none sampled";
	case AP_CI_EXACT: return "exact";
	case AP_CI_NB: return "nb";
	case AP_CI_SPLIT: return "split";
	case AP_CI_NORMAL: return "normal";
	}
	return "?";
}

void ap_row_from_ht(const ap_ht *ht, double u, double rate, ap_row *out)
{
	if (!out)
		return;
	*out = (ap_row){0};
	if (!ht)
		return;
	out->samples = ht->samples;
	out->exact_samples = ht->exact_samples;
	out->u = u;
	out->bytes = ht->bytes;
	out->var_bytes = ht->var_bytes;
	out->var2_bytes = ht->var2_bytes;
	out->objects = ht->objects;
	out->var_objects = ht->var_objects;
	out->var2_objects = ht->var2_objects;
	out->rate = rate;
}

/* The rate bounds use: the coarsest one; NaN when the row names none. */
static double row_rate(const ap_row *r)
{
	double rr = r->rate_max > 0 ? fmax(r->rate_max, r->rate) : r->rate;
	return rr >= 1 && isfinite(rr) ? rr : (double)NAN;
}

static bool row_valid(const ap_row *r)
{
	return finite_nonneg(r->u) && finite_nonneg(r->bytes) &&
	       finite_nonneg(r->var_bytes) && finite_nonneg(r->var2_bytes) &&
	       finite_nonneg(r->objects) && finite_nonneg(r->var_objects) &&
	       finite_nonneg(r->var2_objects) && r->exact_samples <= r->samples &&
	       (r->rate == 0 || (r->rate >= 1 && isfinite(r->rate))) &&
	       finite_nonneg(r->rate_max) && !isnan(row_rate(r));
}

/* ESS of the row's terms, the sample count when the squares are missing. */
static double row_ess(double var, double var2, uint64_t samples)
{
	if (var > 0 && var2 == 0)
		return (double)samples;
	return ap_ess(var, var2);
}

/*
 * The split interval (docs/STATISTICS.md section 5): the estimate y is a
 * certain part plus a weighted count of uncertain events. Matching the
 * latter to w times a Poisson count with ess events (mean ess w, variance
 * ess w^2 = var: w = sqrt(var2 / var), exact for equal terms) leaves
 * c = y - ess w certain. The lower bound is c plus the lower gamma
 * quantile of shape ess, scale w (Fay and Feuer's gamma interval for a
 * weighted Poisson count); the upper one first adds one more event of
 * weight wx = max(w, w_floor), the open end of the window: a row whose
 * samples are all near-certain still gets room for about 3.7 w_floor that
 * no sample could reveal.
 */
static int split_interval(double y, double var, double var2, uint64_t samples,
			  double w_floor, double level, ap_interval *out)
{
	double tail = 0.5 * (1.0 - level);
	double ess = row_ess(var, var2, samples);
	double w = ess > 0 ? sqrt(var / ess) : 0;
	double yu = ess * w, c = y - yu;
	double lo = c;
	if (ess > 0)
		lo += w * apx_specfun_gamma_quantile(ess, tail, false);
	double wx = fmax(w, w_floor);
	double hi = c;
	if (wx > 0) {
		double shape = (yu + wx) * (yu + wx) / (var + wx * wx);
		double scale = (var + wx * wx) / (yu + wx);
		hi += scale * apx_specfun_gamma_quantile(shape, tail, true);
	}
	if (isnan(lo) || isnan(hi))
		return AP_ERANGE;
	out->estimate = y;
	out->lo = fmax(0.0, fmin(lo, y));
	out->hi = fmax(hi, y);
	return 0;
}

static bool normal_ok(const ap_row *r, double ess, double rate)
{
	return ess >= AP_ESS_NORMAL_MIN &&
	       r->var_bytes >= AP_ESS_NORMAL_MIN * rate * rate;
}

/*
 * Shared start of both row intervals: validate, and compute the bounds of
 * what could hide unseen at the row's coarsest rate (the zero-sample rule).
 */
static int row_start(const ap_row *row, double level, ap_interval *out,
		     ap_ci_method *method, double *bhi, double *ohi)
{
	if (method)
		*method = AP_CI_NONE;
	if (!out || !row || !row_valid(row) || !(level > 0 && level < 1)) {
		set_nan(out);
		return AP_EINVAL;
	}
	return ap_zero_sample_bound(row_rate(row), level, row->z_min, bhi, ohi);
}

static int row_finish(int rc, ap_ci_method m, ap_interval *out,
		      ap_ci_method *method)
{
	if (rc) {
		set_nan(out);
		return rc;
	}
	if (method)
		*method = m;
	return 0;
}

int ap_row_bytes_interval(const ap_row *row, double level, ap_interval *out,
			  ap_ci_method *method)
{
	double bhi, ohi;
	int rc = row_start(row, level, out, method, &bhi, &ohi);
	if (rc)
		return rc;
	double rate = row_rate(row);
	if (row->samples == 0) {
		*out = (ap_interval){row->bytes, 0, fmax(bhi, row->bytes)};
		return 0;
	}
	ap_ci_method m;
	double ess = row_ess(row->var_bytes, row->var2_bytes, row->samples);
	if (ap_row_is_exact(row->samples, row->exact_samples) || rate == 1) {
		m = AP_CI_EXACT;
		rc = ap_ht_interval(row->bytes, 0, level, out);
	} else if (normal_ok(row, ess, rate)) {
		m = AP_CI_NORMAL;
		rc = ap_ht_interval(row->bytes, row->var_bytes, level, out);
	} else if (row->rate > 0 && row->rate >= row->rate_max &&
		   row->exact_samples == 0 &&
		   row->var_bytes >= 0.5 * (double)row->samples * rate * rate) {
		m = AP_CI_NB;
		rc = ap_nb_interval(row->samples, row->u, rate, level, true,
				    true, out);
		if (rc == 0) {
			out->estimate = row->bytes;
			out->lo = fmin(out->lo, row->bytes);
			out->hi = fmax(out->hi, row->bytes);
		}
	} else {
		m = AP_CI_SPLIT;
		rc = split_interval(row->bytes, row->var_bytes, row->var2_bytes,
				    row->samples, rate, level, out);
	}
	return row_finish(rc, m, out, method);
}

int ap_row_objects_interval(const ap_row *row, double level, ap_interval *out,
			    ap_ci_method *method)
{
	double bhi, ohi;
	int rc = row_start(row, level, out, method, &bhi, &ohi);
	if (rc)
		return rc;
	double rate = row_rate(row);
	if (row->samples == 0) {
		*out = (ap_interval){row->objects, 0, fmax(ohi, row->objects)};
		return 0;
	}
	ap_ci_method m;
	double ess_b = row_ess(row->var_bytes, row->var2_bytes, row->samples);
	double ess = row_ess(row->var_objects, row->var2_objects, row->samples);
	if (ap_row_is_exact(row->samples, row->exact_samples) || rate == 1) {
		m = AP_CI_EXACT;
		rc = ap_ht_interval(row->objects, 0, level, out);
	} else if (normal_ok(row, ess_b, rate) && ess >= AP_ESS_NORMAL_MIN) {
		m = AP_CI_NORMAL;
		rc = ap_ht_interval(row->objects, row->var_objects, level, out);
	} else {
		m = AP_CI_SPLIT;
		rc = split_interval(row->objects, row->var_objects,
				    row->var2_objects, row->samples,
				    fmax(row->objects / (double)row->samples,
					 row->var_objects / row->objects),
				    level, out);
		/* Objects of z_min bytes could hide unseen (zero-sample rule). */
		if (rc == 0 && row->z_min > 0)
			out->hi = fmax(out->hi, row->objects + ohi);
	}
	return row_finish(rc, m, out, method);
}

uint64_t ap_round_key(const uint64_t *ids, size_t n, uint32_t column)
{
	uint64_t h = hash_mix64(0x9e3779b97f4a7c15u ^ column);
	for (size_t i = 0; ids && i < n; i++)
		h = hash_mix64(h ^ hash_mix64(ids[i] + i));
	return h;
}

int64_t ap_round_unbiased(double x, uint64_t key)
{
	if (isnan(x))
		return 0;
	if (x >= 0x1p63)
		return INT64_MAX;
	if (x <= -0x1p63)
		return INT64_MIN;
	double f = floor(x);
	/* A uniform in [0, 1) from the key: round up with probability x - f. */
	double coin = (double)(hash_mix64(key) >> 11) * 0x1.0p-53;
	int64_t r = (int64_t)f;
	if (coin < x - f && r < INT64_MAX)
		r++;
	return r;
}
