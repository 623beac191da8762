/*
 * lifebins.h: per-site lifetimes for Kaplan-Meier (docs/TIME.md,
 * "Lifetimes"): a weighted log-scale histogram of the lifetimes of a
 * site's freed sampled blocks, kept under the stack table's lock (each
 * free of a sampled block is applied with the table's next batch of
 * records, table_flush_locked), and at dump time the same for the ages of
 * the blocks still alive (censored), from a walk of the live records (the
 * region's side table and the sampled set).
 *
 * A bin keeps the sums KM and the short-lived rate need: samples, sum w,
 * sum w^2, sum w size and sum (w^2 - w) size^2. Bins are log-linear
 * (ap_hist keys) at LIFE_SIGBITS, 16 per power of two (about 4% wide);
 * a site holds at most LIFE_BINS_MAX bins: past that its bins are merged
 * into ones twice as wide (down to 2 per power of two, 128 bins for all
 * of 2^64 ns, so a block always finds a bin). So a site costs at most
 * 16 + LIFE_BINS_MAX * 44 bytes (7 KB), and only sites with freed
 * samples have bins at all.
 *
 * Layout: the header, then the bins' keys packed (4 bytes each), then the
 * bins (lifebins_at). A sampled free searches the keys, which share the
 * header's cache line up to 12 bins, and then reads one bin: two cache
 * misses where a search over the 40-byte bins missed once per probe.
 */
#ifndef AP_PRELOAD_LIFEBINS_H
#define AP_PRELOAD_LIFEBINS_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

#define LIFE_SIGBITS 4
#define LIFE_BINS_MAX 160

typedef struct life_bin { /* its key is the block's keys[i] */
	uint32_t n;
	double w, w2, bytes, bytes_var;
} life_bin;

typedef struct life_bins {
	uint32_t sigbits, n, cap, pad_;
	uint32_t keys[]; /* bin i's key, ascending; then the bins */
} life_bins;

/* Where the bins of a block of capacity cap start. */
static inline size_t lifebins_bins_offset(uint32_t cap)
{
	return (sizeof(life_bins) + (size_t)cap * sizeof(uint32_t) + 7) & ~(size_t)7;
}

/* Bin i (below b->n) in key order. */
static inline life_bin *lifebins_at(const life_bins *b, uint32_t i)
{
	/* 8-aligned: the offset is rounded to 8, the block to 16 */
	return (life_bin *)(void *)((char *)(uintptr_t)b + lifebins_bins_offset(b->cap)) + i;
}

struct stack_table;

/* Add one block of weight w and size bytes that lived t_ns to *pb (made
 * or grown from a; on failure the block is not counted). */
void lifebins_add(arena *a, life_bins **pb, uint64_t t_ns, double w, uint64_t size);

/* The "lifetimes" extension's data for the table now (now_ns: the dump's
 * time since the profile's start), in a's memory. AP_ENOTFOUND when no
 * site has any lifetime. */
int lifebins_blob(struct stack_table *t, arena *a, uint64_t now_ns,
		  unsigned char **data, size_t *len);

#endif
