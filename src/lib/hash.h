/*
 * hash.h: the 64-bit mixing function the library and the preload runtime
 * share (internal; not installed).
 *
 * SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators", 2014): two xor-shift-multiply rounds and
 * a final xor-shift, so that every output bit depends on every input bit.
 * It turns sequential ids or addresses into well-spread hash-table slots,
 * and one step of SplitMix64 (prng.c) is this applied to a counter.
 * hash_bytes runs FNV-1a over a byte string and then this finaliser, whose
 * low bits (the ones a power-of-two table keeps) FNV alone mixes poorly.
 */
#ifndef ALLOCPROF_LIB_HASH_H
#define ALLOCPROF_LIB_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t hash_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static inline uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a offset basis */
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return hash_mix64(h);
}

#endif
