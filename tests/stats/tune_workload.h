/*
 * tune_workload.h: the synthetic size-class tables of the worked example
 * in docs/STATISTICS.md ("Optimal per-class sampling"), shared by
 * tests/unit/tune_test.c and tests/stats/tune_design_test.c so that the
 * documented numbers and the Monte Carlo replay use one definition.
 *
 * 65 classes, 4 per doubling from 16 B to 1 MiB; allocation counts follow
 * a log-normal: log2(size) ~ N(mu, sd) (discretised, rounded to integers,
 * `total` allocations); the fraction of a class live at the dump is
 * survival(log2 size) for one of the survival laws below.
 */
#ifndef TUNE_WORKLOAD_H
#define TUNE_WORKLOAD_H

#include <math.h>
#include <stddef.h>

#include "allocprof/tune.h"

#define TW_CLASSES 65

typedef enum {
	TW_LINEAR,   /* 1% at 16 B rising linearly in log size to 50% at 1 MiB */
	TW_LOGLIN,   /* 0.1% at 16 B rising log-linearly to 100% at 1 MiB */
	TW_LOGISTIC, /* logistic in log2 size, midpoint 4 KiB, slope 1.5 */
	TW_STEP,     /* 0.1% below 4 KiB, 100% from 4 KiB */
	TW_FALLING   /* 50% at 16 B falling linearly to 1% at 1 MiB */
} tw_survival;

static inline double tw_survival_of(tw_survival law, double l2)
{
	double t = (l2 - 4) / 16; /* 0 at 16 B, 1 at 1 MiB */
	switch (law) {
	case TW_LINEAR:
		return 0.01 + 0.49 * t;
	case TW_LOGLIN:
		return pow(10, -3 + 3 * t);
	case TW_LOGISTIC:
		return 1 / (1 + exp(-1.5 * (l2 - 12)));
	case TW_STEP:
		return l2 >= 12 ? 1.0 : 0.001;
	case TW_FALLING:
		return 0.5 - 0.49 * t;
	}
	return 0;
}

/* Fill cls[TW_CLASSES] (p_min = 0, no ceiling). */
static inline void tw_build(ap_tune_class *cls, double mu, double sd,
			    double total, tw_survival law)
{
	double sum = 0;
	for (int i = 0; i < TW_CLASSES; i++) {
		double l2 = 4 + 0.25 * i;
		cls[i].size = round(pow(2, l2));
		cls[i].allocs = exp(-0.5 * pow((l2 - mu) / sd, 2));
		sum += cls[i].allocs;
	}
	for (int i = 0; i < TW_CLASSES; i++) {
		double l2 = 4 + 0.25 * i;
		cls[i].allocs = round(cls[i].allocs / sum * total);
		cls[i].live = round(tw_survival_of(law, l2) * cls[i].allocs);
		cls[i].p_min = 0;
		cls[i].p_max = 0;
	}
}

#endif
