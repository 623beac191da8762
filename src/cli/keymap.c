/*
 * keymap.c: the key map and string pool of keymap.h. Open addressing with
 * linear probing on a 64-bit hash of the key bytes; the table doubles
 * before it is half full, so probes stay short.
 */
#define _GNU_SOURCE
#include "keymap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/common.h"


struct km_slot {
	uint64_t hash;
	char *key; /* NULL = empty */
	size_t len, value;
};

struct hv_keymap {
	struct km_slot *slots;
	size_t cap, n; /* cap is a power of two */
};

static uint64_t km_hash(const void *key, size_t len)
{
	/* FNV-1a, then a murmur3 finalizer so low bits mix well. */
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

hv_keymap *hv_keymap_new(void)
{
	hv_keymap *m = calloc(1, sizeof *m);
	if (m && !(m->slots = calloc(m->cap = 64, sizeof *m->slots))) {
		free(m);
		return NULL;
	}
	return m;
}

void hv_keymap_free(hv_keymap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	free(m);
}

static struct km_slot *km_find(const hv_keymap *m, uint64_t h, const void *key,
			       size_t len)
{
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct km_slot *s = &m->slots[i];
		if (!s->key || (s->hash == h && s->len == len &&
				!memcmp(s->key, key, len)))
			return s;
	}
}

size_t hv_keymap_get(const hv_keymap *m, const void *key, size_t len)
{
	struct km_slot *s = km_find(m, km_hash(key, len), key, len);
	return s->key ? s->value : SIZE_MAX;
}

int hv_keymap_put(hv_keymap *m, const void *key, size_t len, size_t value)
{
	if (2 * (m->n + 1) > m->cap) {
		struct km_slot *old = m->slots;
		size_t oldcap = m->cap;
		m->slots = calloc(2 * oldcap, sizeof *m->slots);
		if (!m->slots) {
			m->slots = old;
			return AP_ENOMEM;
		}
		m->cap = 2 * oldcap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].key)
				*km_find(m, old[i].hash, old[i].key, old[i].len) = old[i];
		free(old);
	}
	uint64_t h = km_hash(key, len);
	struct km_slot *s = km_find(m, h, key, len);
	if (s->key) {
		s->value = value;
		return 0;
	}
	if (!(s->key = malloc(len ? len : 1)))
		return AP_ENOMEM;
	memcpy(s->key, key, len);
	s->hash = h;
	s->len = len;
	s->value = value;
	m->n++;
	return 0;
}

int hv_strpool_init(hv_strpool *p)
{
	memset(p, 0, sizeof *p);
	p->map = hv_keymap_new();
	return p->map ? 0 : AP_ENOMEM;
}

void hv_strpool_free(hv_strpool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->strs[i]);
	free(p->strs);
	hv_keymap_free(p->map);
	memset(p, 0, sizeof *p);
}

const char *hv_strpool_get(hv_strpool *p, const char *s)
{
	size_t n = strlen(s), i = hv_keymap_get(p->map, s, n);
	if (i != SIZE_MAX)
		return p->strs[i];
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		char **ns = realloc(p->strs, cap * sizeof *ns);
		if (!ns)
			return NULL;
		p->strs = ns;
		p->cap = cap;
	}
	char *c = strdup(s);
	if (!c || hv_keymap_put(p->map, s, n, p->n)) {
		free(c);
		return NULL;
	}
	p->strs[p->n++] = c;
	return c;
}
