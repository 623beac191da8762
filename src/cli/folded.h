/*
 * folded.h: folded stacks ("root;...;leaf WEIGHT" per line), the format
 * FlameGraph, inferno and speedscope read: written by allocprof folded and
 * convert --to folded from a heap view.
 */
#ifndef ALLOCPROF_CLI_FOLDED_H
#define ALLOCPROF_CLI_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heapview.h"

/*
 * Round n non-negative weights to integers so that they sum to the rounded
 * sum of the inputs and each moves by less than 1 (cumulative rounding:
 * out[i] = round(prefix_i) - round(prefix_{i-1})). NaN and negative inputs
 * count as 0.
 */
void folded_round_weights(const double *in, size_t n, uint64_t *out);

/*
 * Write v's stacks as folded lines to out: frames sanitised by
 * txt_folded_frame (text.h), stacks that print the same merged into one
 * line, lines sorted (byte order), weights = the estimated bytes rounded by
 * folded_round_weights so they sum to the rounded total, lines of weight 0
 * left out. 0, or -1 with errno (ENOMEM, or the stream's write error).
 */
int folded_write(const hv_view *v, FILE *out);

#endif
