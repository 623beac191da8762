/*
 * symmemo.c: the symbolization memo of a series (symmemo.h). Keys are
 * the mapping's file name and build ID and the location's address, so two
 * profiles that number their mappings and locations differently still
 * share entries; a location the symbolizer could not resolve is
 * remembered as such (no lines), so it is not looked up again either.
 */
#define _GNU_SOURCE
#include "symmemo.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "keymap.h"
#include "profmerge.h"

struct entry {
	size_t first, n; /* in lines */
};

struct sym_memo {
	hv_keymap *map;     /* key -> entries index */
	struct entry *ent;
	size_t nent, capent;
	hv_sym_line *lines;
	size_t nlines, caplines;
	hv_strpool strs;
	char *key;
	size_t capkey;
	size_t misses;
};

sym_memo *sym_memo_new(void)
{
	sym_memo *m = calloc(1, sizeof *m);
	if (!m || hv_strpool_init(&m->strs) || !(m->map = hv_keymap_new())) {
		sym_memo_free(m);
		return NULL;
	}
	return m;
}

void sym_memo_free(sym_memo *m)
{
	if (!m)
		return;
	hv_keymap_free(m->map);
	hv_strpool_free(&m->strs);
	free(m->ent);
	free(m->lines);
	free(m->key);
	free(m);
}

size_t sym_memo_misses(const sym_memo *m) { return m->misses; }

/* The key of location l of p in m->key ("file\0build\0" + address);
 * 0 when l needs no symbolizing (it has lines or no mapping). */
static size_t key_of(sym_memo *m, const ap_profile *p, const ap_location *l)
{
	const ap_mapping *mp = l->mapping_id ? ap_profile_mapping(p, l->mapping_id)
					     : NULL;
	if (l->nlines || !mp)
		return 0;
	const char *file = ap_profile_string(p, mp->filename);
	const char *build = ap_profile_string(p, mp->build_id);
	size_t a = strlen(file) + 1, b = strlen(build) + 1;
	if (ap_cli_grow((void **)&m->key, &m->capkey, a + b + sizeof l->address, 1))
		return 0;
	memcpy(m->key, file, a);
	memcpy(m->key + a, build, b);
	memcpy(m->key + a + b, &l->address, sizeof l->address);
	return a + b + sizeof l->address;
}

static bool knows_all(sym_memo *m, const ap_profile *p)
{
	for (size_t i = 0; i < p->nlocations; i++) {
		size_t len = key_of(m, p, &p->locations[i]);
		if (len && hv_keymap_get(m->map, m->key, len) == SIZE_MAX)
			return false;
	}
	return true;
}

static const char *str(sym_memo *m, const ap_profile *p, int64_t i)
{
	return hv_strpool_get(&m->strs, ap_profile_string(p, i));
}

/* Remember what location i of `in` became in its symbolized copy `out`. */
static int learn_one(sym_memo *m, const ap_profile *in, const ap_location *l,
		     const ap_location *sl, const ap_profile *out)
{
	size_t len = key_of(m, in, l);
	if (!len || hv_keymap_get(m->map, m->key, len) != SIZE_MAX)
		return 0;
	if (ap_cli_grow((void **)&m->ent, &m->capent, m->nent + 1, sizeof *m->ent) ||
	    ap_cli_grow((void **)&m->lines, &m->caplines, m->nlines + sl->nlines,
			sizeof *m->lines))
		return AP_ENOMEM;
	struct entry *e = &m->ent[m->nent];
	e->first = m->nlines;
	e->n = 0;
	for (size_t j = 0; j < sl->nlines; j++) {
		const ap_function *f = ap_profile_function(out, sl->lines[j].function_id);
		hv_sym_line *sy = &m->lines[m->nlines + e->n++];
		sy->name = str(m, out, f ? f->name : 0);
		sy->system_name = str(m, out, f ? f->system_name : 0);
		sy->file = str(m, out, f ? f->filename : 0);
		sy->line = sl->lines[j].line;
		sy->column = sl->lines[j].column;
		if (!sy->name || !sy->system_name || !sy->file)
			return AP_ENOMEM;
	}
	m->nlines += e->n;
	return hv_keymap_put(m->map, m->key, len, m->nent++);
}

/*
 * The symbolizer's copy keeps each location's address and mapping file,
 * so locations pair up by (mapping file, build ID, address).
 */
static int learn(sym_memo *m, const ap_profile *in, const ap_profile *out)
{
	hv_keymap *byaddr = hv_keymap_new();
	int rc = byaddr ? 0 : AP_ENOMEM;
	for (size_t i = 0; !rc && i < out->nlocations; i++) {
		const ap_location *sl = &out->locations[i];
		ap_location bare = *sl;
		bare.nlines = 0; /* its key as an unsymbolized location */
		size_t len = key_of(m, out, &bare);
		if (len && hv_keymap_put(byaddr, m->key, len, i))
			rc = AP_ENOMEM;
	}
	for (size_t i = 0; !rc && i < in->nlocations; i++) {
		size_t len = key_of(m, in, &in->locations[i]);
		size_t j = len ? hv_keymap_get(byaddr, m->key, len) : SIZE_MAX;
		if (j != SIZE_MAX)
			rc = learn_one(m, in, &in->locations[i], &out->locations[j],
				       out);
	}
	hv_keymap_free(byaddr);
	return rc;
}

static int from_memo(void *ctx, const ap_profile *in, const ap_location *l,
		     const hv_sym_line **lines, size_t *n)
{
	sym_memo *m = ctx;
	size_t len = key_of(m, in, l);
	size_t e = len ? hv_keymap_get(m->map, m->key, len) : SIZE_MAX;
	*lines = NULL;
	*n = 0;
	if (e != SIZE_MAX && m->ent[e].n) {
		*lines = m->lines + m->ent[e].first;
		*n = m->ent[e].n;
	}
	return 0;
}

int sym_memo_symbolize(sym_memo *m, const ap_profile *in, const sym_options *o,
		       ap_profile **out, char *err, size_t errlen)
{
	if (knows_all(m, in)) {
		hv_rewrite rw = {from_memo, NULL, m};
		ap_profile *const one[1] = {(ap_profile *)in};
		return hv_profile_merge_ex(one, 1, &rw, out, err, errlen);
	}
	m->misses++;
	int rc = sym_symbolize_profile(in, o, out, NULL, err, errlen);
	if (!rc && (rc = learn(m, in, *out))) {
		ap_profile_destroy(*out);
		*out = NULL;
		ap_cli_seterr(err, errlen, "out of memory");
	}
	return rc;
}
