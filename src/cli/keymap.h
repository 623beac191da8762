/*
 * keymap.h: the CLI's small hash map from byte-string keys to indices and
 * the string pool built on it. Merging, symbolizing and building views all
 * deduplicate (mappings, functions, stacks, sites, names) with these.
 */
#ifndef ALLOCPROF_CLI_KEYMAP_H
#define ALLOCPROF_CLI_KEYMAP_H

#include <stddef.h>

/*
 * hv_keymap_get returns the index stored for key, or SIZE_MAX;
 * hv_keymap_put stores one (the key is copied): 0 or AP_ENOMEM.
 */
typedef struct hv_keymap hv_keymap;
hv_keymap *hv_keymap_new(void);
void hv_keymap_free(hv_keymap *m);
size_t hv_keymap_get(const hv_keymap *m, const void *key, size_t len);
int hv_keymap_put(hv_keymap *m, const void *key, size_t len, size_t value);

/*
 * Interned strings: hv_strpool_get returns the pool's copy of s (added on
 * first use), stable until hv_strpool_free; NULL when out of memory. A
 * zeroed pool is ready after hv_strpool_init.
 */
typedef struct hv_strpool {
	hv_keymap *map;
	char **strs;
	size_t n, cap;
} hv_strpool;
int hv_strpool_init(hv_strpool *p);
void hv_strpool_free(hv_strpool *p);
const char *hv_strpool_get(hv_strpool *p, const char *s);

#endif
