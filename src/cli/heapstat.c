/*
 * heapstat.c: the additive statistics of heapview.h (hv_stat): sums per
 * sampling rate, and the confidence intervals finished from them
 * (estimate.h; [R4] for the negative binomial, [R1] for Horvitz-Thompson).
 * Kept apart from heapview.c, which builds the views that carry them.
 */
#include "heapview.h"

#include <math.h>

/* ---- statistics ------------------------------------------------------ */

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
	into->samples += from->samples;
	into->u += from->u;
	into->rates_overflow |= from->rates_overflow;
	for (size_t i = 0; i < from->nrates; i++)
		hv_stat_add_group(into, from->rates[i].rate, from->rates[i].samples,
			       from->rates[i].u);
}

static bool all_exact(const hv_stat *s)
{
	for (size_t i = 0; i < s->nrates; i++)
		if (s->rates[i].rate > 1.0)
			return false;
	return !s->rates_overflow;
}

void hv_stat_finish(hv_stat *s, double level)
{
	ap_interval iv;
	if (s->samples == 0 || all_exact(s)) {
		/* No sampling error (rate 1), or nothing sampled: the site is
		 * what it is; with no samples there is nothing to widen. */
		s->bytes_lo = s->bytes_hi = s->bytes;
		s->objects_lo = s->objects_hi = s->objects;
		s->method = HV_EXACT;
		return;
	}
	double req = s->req_bytes > 0 ? s->req_bytes : s->bytes;
	/* NB bounds count trial bytes (requested sizes); a usable-size view
	 * scales them by the site's usable/requested ratio. */
	double scale = req > 0 ? s->bytes / req : 1.0;
	bool used_nb = false;
	int rc;
	if (s->samples < AP_NB_MAX_SAMPLES && !s->rates_overflow && s->nrates > 1) {
		rc = ap_nb_interval_groups(s->rates, s->nrates, level, true, true,
					   &iv);
		used_nb = rc == 0;
		if (rc == 0) {
			iv.lo = fmin(iv.lo, req);
			iv.hi = fmax(iv.hi, req);
		}
	} else if (s->nrates == 1 && !s->rates_overflow) {
		rc = ap_bytes_interval(s->samples, s->rates[0].u, s->rates[0].rate,
				       req, s->var_bytes / (scale * scale),
				       level, &iv, &used_nb);
	} else {
		rc = ap_ht_interval(req, s->var_bytes / (scale * scale), level,
				    &iv);
	}
	if (rc) {
		s->bytes_lo = s->bytes_hi = (double)NAN;
	} else {
		s->bytes_lo = iv.lo * scale;
		s->bytes_hi = iv.hi * scale;
	}
	s->method = used_nb ? HV_NB : HV_NORMAL;
	if (ap_objects_interval(s->samples, s->objects, s->var_objects, level,
				&iv)) {
		s->objects_lo = s->objects_hi = (double)NAN;
	} else {
		s->objects_lo = iv.lo;
		s->objects_hi = iv.hi;
	}
}
