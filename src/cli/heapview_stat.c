/*
 * heapview_stat.c: the statistics of heapview.h's rows: adding the
 * additive sums of samples, stacks and sites (hv_stat), and turning them
 * into intervals by the one rule every view uses, estimate.h's
 * ap_row_bytes_interval / ap_row_objects_interval (docs/STATISTICS.md
 * section 5: by the effective sample size of the variance terms, the one
 * zero-sample bound, exact only when every sample was; [R4] for NB, [R1]
 * for HT).
 */
#include "heapview.h"

#include <math.h>
#include <string.h>

const char *hv_method_name(ap_ci_method m) { return ap_ci_method_name(m); }

void hv_stat_add_group(hv_stat *s, double rate, uint64_t samples, double u)
{
	for (size_t i = 0; i < s->nrates; i++) {
		if (s->rates[i].rate == rate) {
			s->rates[i].samples += samples;
			s->rates[i].u += u;
			return;
		}
	}
	if (s->nrates == HV_MAX_RATES) {
		s->rates_overflow = true;
		return;
	}
	s->rates[s->nrates++] = (ap_nb_group){samples, u, rate};
}

void hv_stat_add(hv_stat *into, const hv_stat *from)
{
	into->bytes += from->bytes;
	into->req_bytes += from->req_bytes;
	into->objects += from->objects;
	into->var_bytes += from->var_bytes;
	into->var_objects += from->var_objects;
	into->var2_bytes += from->var2_bytes;
	into->var2_objects += from->var2_objects;
	into->samples += from->samples;
	into->exact_samples += from->exact_samples;
	into->u += from->u;
	into->rate_max = fmax(into->rate_max, from->rate_max);
	/* every stat of a view carries the view's size floor */
	if (from->z_min > into->z_min)
		into->z_min = from->z_min;
	into->rates_overflow |= from->rates_overflow;
	for (size_t i = 0; i < from->nrates; i++)
		hv_stat_add_group(into, from->rates[i].rate, from->rates[i].samples,
			       from->rates[i].u);
}

void hv_stat_row(const hv_stat *s, ap_row *row, double *scale)
{
	double req = s->req_bytes > 0 ? s->req_bytes : s->bytes;
	/* The row is in requested bytes (NB bounds count trial bytes); a
	 * usable-size view scales the bounds by usable/requested. */
	double k = req > 0 ? s->bytes / req : 1.0;
	memset(row, 0, sizeof *row);
	row->samples = s->samples;
	row->exact_samples = s->exact_samples;
	row->u = 0;
	row->bytes = req;
	row->var_bytes = s->var_bytes / (k * k);
	row->var2_bytes = s->var2_bytes / (k * k * k * k);
	row->objects = s->objects;
	row->var_objects = s->var_objects;
	row->var2_objects = s->var2_objects;
	bool one = s->nrates == 1 && !s->rates_overflow;
	row->rate = one ? s->rates[0].rate : 0;
	row->u = one ? s->rates[0].u : s->u;
	row->rate_max = s->rate_max > 0 ? s->rate_max : row->rate;
	row->z_min = s->z_min;
	*scale = k;
}

void hv_stat_finish(hv_stat *s, double level)
{
	ap_row row;
	double k;
	ap_interval iv;
	ap_ci_method m = AP_CI_NONE;
	hv_stat_row(s, &row, &k);
	if (ap_row_bytes_interval(&row, level, &iv, &m)) {
		s->bytes_lo = s->bytes_hi = (double)NAN;
	} else {
		s->bytes_lo = iv.lo * k;
		s->bytes_hi = iv.hi * k;
	}
	s->method = m;
	m = AP_CI_NONE;
	if (ap_row_objects_interval(&row, level, &iv, &m)) {
		s->objects_lo = s->objects_hi = (double)NAN;
	} else {
		s->objects_lo = iv.lo;
		s->objects_hi = iv.hi;
	}
	s->obj_method = m;
}

