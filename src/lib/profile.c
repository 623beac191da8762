/*
 * profile.c: the in-memory profile model of allocprof/profile.h.
 *
 * Everything a profile owns comes from the allocator it was created with: the
 * growable top-level arrays (samples, locations, ...) through alloc/realloc,
 * and the many small immutable pieces (string bytes, a sample's location ids,
 * values and labels, a location's lines) from a chunked bump arena released
 * in one sweep by ap_profile_destroy. The preload runtime passes its
 * mmap-backed arena here, so nothing in this file may reach libc malloc.
 *
 * Strings are interned through an open-addressing hash table; mapping,
 * location and function ids are indexed by open-addressing id -> index maps,
 * so builders and lookups are O(1) expected. Builders check every reference
 * before changing anything, so a failed call (bad reference or allocation
 * failure) leaves the profile as it was; the reason for the last failure is
 * kept for ap_profile_error().
 */
#include "allocprof/profile.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"

#define ARENA_CHUNK 32768u
#define ARENA_ALIGN 16u

struct arena_chunk {
	struct arena_chunk *next;
	size_t size; /* bytes of the whole chunk, header included */
	size_t used; /* bytes used, header included */
};

/* A string hash slot: idx is strings[] index + 1 (0 = empty slot). */
struct str_slot {
	uint64_t hash;
	size_t idx;
};

/* An id -> array index slot (id 0 = empty; ids are nonzero). */
struct id_slot {
	uint64_t id;
	size_t idx;
};

struct id_map {
	struct id_slot *slots;
	size_t cap; /* power of two or 0 */
	size_t n;
	uint64_t max_id;
};

struct ap_profile_priv {
	ap_allocator a;
	struct arena_chunk *chunks;
	size_t cap_sample_types, cap_samples, cap_mappings, cap_locations;
	size_t cap_functions, cap_strings, cap_comments, cap_exts;
	struct str_slot *str_slots;
	size_t str_cap;
	struct id_map mappings, locations, functions;
	char err[192];
};

struct profile_block {
	ap_profile pub;
	struct ap_profile_priv priv;
};

__attribute__((format(printf, 2, 3)))
static void set_err(ap_profile *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->priv->err, sizeof p->priv->err, fmt, ap);
	va_end(ap);
}

/* ---- memory ---------------------------------------------------------- */

static void *p_alloc(ap_profile *p, size_t n)
{
	return p->priv->a.alloc(p->priv->a.ctx, n);
}

static void p_free(ap_profile *p, void *ptr, size_t n)
{
	if (ptr)
		p->priv->a.free(p->priv->a.ctx, ptr, n);
}

/* Bump-allocate n bytes (16-aligned) from the arena; NULL on failure. */
static void *arena_alloc(ap_profile *p, size_t n)
{
	struct ap_profile_priv *pv = p->priv;
	size_t hdr = (sizeof(struct arena_chunk) + ARENA_ALIGN - 1) &
		     ~(size_t)(ARENA_ALIGN - 1);
	if (n > SIZE_MAX - hdr - ARENA_ALIGN) {
		set_err(p, "allocation of %zu bytes is too large", n);
		return NULL;
	}
	n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	struct arena_chunk *c = pv->chunks;
	if (!c || c->size - c->used < n) {
		size_t size = hdr + n > ARENA_CHUNK ? hdr + n : ARENA_CHUNK;
		c = pv->a.alloc(pv->a.ctx, size);
		if (!c) {
			set_err(p, "out of memory");
			return NULL;
		}
		c->size = size;
		c->used = hdr;
		/* A one-off big chunk goes behind the current one so the
		 * current chunk's free space stays usable. */
		if (pv->chunks && size > ARENA_CHUNK) {
			c->next = pv->chunks->next;
			pv->chunks->next = c;
		} else {
			c->next = pv->chunks;
			pv->chunks = c;
		}
	}
	void *r = (char *)c + c->used;
	c->used += n;
	return r;
}

/*
 * Make room for at least need elements of size elem in *arr (capacity
 * *cap), doubling. 0 or AP_ENOMEM/AP_ERANGE; *arr is unchanged on failure.
 */
static int reserve(ap_profile *p, void *arr_ptr, size_t *cap, size_t need,
		   size_t elem)
{
	void **arr = arr_ptr;
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 8;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			goto range;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		goto range;
	void *n;
	if (*arr)
		n = p->priv->a.realloc(p->priv->a.ctx, *arr, *cap * elem,
				       ncap * elem);
	else
		n = p_alloc(p, ncap * elem);
	if (!n) {
		set_err(p, "out of memory");
		return AP_ENOMEM;
	}
	*arr = n;
	*cap = ncap;
	return 0;
range:
	set_err(p, "too many elements (%zu)", need);
	return AP_ERANGE;
}

/* ---- id maps --------------------------------------------------------- */

static size_t id_hash(uint64_t id)
{
	return (size_t)hash_mix64(id); /* sequential ids spread over all slots */
}

static const struct id_slot *id_find(const struct id_map *m, uint64_t id)
{
	if (!m->cap || !id)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = id_hash(id) & mask;; i = (i + 1) & mask) {
		if (m->slots[i].id == id)
			return &m->slots[i];
		if (!m->slots[i].id)
			return NULL;
	}
}

static void id_put(struct id_map *m, uint64_t id, size_t idx)
{
	size_t mask = m->cap - 1;
	size_t i = id_hash(id) & mask;
	while (m->slots[i].id)
		i = (i + 1) & mask;
	m->slots[i].id = id;
	m->slots[i].idx = idx;
}

/* Ensure room for one more id at load <= 1/2. */
static int id_reserve(ap_profile *p, struct id_map *m)
{
	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	size_t ncap = m->cap ? m->cap * 2 : 16;
	if (ncap > SIZE_MAX / sizeof(struct id_slot) / 2) {
		set_err(p, "too many ids");
		return AP_ERANGE;
	}
	struct id_slot *ns = p_alloc(p, ncap * sizeof *ns);
	if (!ns) {
		set_err(p, "out of memory");
		return AP_ENOMEM;
	}
	memset(ns, 0, ncap * sizeof *ns);
	struct id_map old = *m;
	m->slots = ns;
	m->cap = ncap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i].id)
			id_put(m, old.slots[i].id, old.slots[i].idx);
	p_free(p, old.slots, old.cap * sizeof *old.slots);
	return 0;
}

/*
 * Resolve the id for a new object: *id 0 = the next free id. 0, or
 * AP_EINVAL on a duplicate, AP_ERANGE when ids are exhausted.
 */
static int id_claim(ap_profile *p, struct id_map *m, const char *what,
		    uint64_t *id)
{
	if (!*id) {
		if (m->max_id == UINT64_MAX) {
			set_err(p, "no %s id left to assign", what);
			return AP_ERANGE;
		}
		*id = m->max_id + 1;
	} else if (id_find(m, *id)) {
		set_err(p, "duplicate %s id %llu", what,
			(unsigned long long)*id);
		return AP_EINVAL;
	}
	return id_reserve(p, m);
}

static void id_commit(struct id_map *m, uint64_t id, size_t idx)
{
	id_put(m, id, idx);
	m->n++;
	if (id > m->max_id)
		m->max_id = id;
}

/* ---- strings --------------------------------------------------------- */

static void str_put(struct ap_profile_priv *pv, uint64_t h, size_t idx)
{
	size_t mask = pv->str_cap - 1;
	size_t i = (size_t)h & mask;
	while (pv->str_slots[i].idx)
		i = (i + 1) & mask;
	pv->str_slots[i].hash = h;
	pv->str_slots[i].idx = idx + 1;
}

static int str_reserve(ap_profile *p)
{
	struct ap_profile_priv *pv = p->priv;
	if ((p->nstrings + 1) * 2 <= pv->str_cap)
		return 0;
	size_t ncap = pv->str_cap ? pv->str_cap * 2 : 64;
	if (ncap > SIZE_MAX / sizeof(struct str_slot) / 2) {
		set_err(p, "too many strings");
		return AP_ERANGE;
	}
	struct str_slot *ns = p_alloc(p, ncap * sizeof *ns);
	if (!ns) {
		set_err(p, "out of memory");
		return AP_ENOMEM;
	}
	memset(ns, 0, ncap * sizeof *ns);
	struct str_slot *old = pv->str_slots;
	size_t ocap = pv->str_cap;
	pv->str_slots = ns;
	pv->str_cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].idx)
			str_put(pv, old[i].hash, old[i].idx - 1);
	p_free(p, old, ocap * sizeof *old);
	return 0;
}

int64_t ap_profile_intern_n(ap_profile *p, const char *s, size_t n)
{
	if (!p || (!s && n)) {
		return AP_EINVAL;
	}
	if (n && memchr(s, '\0', n)) {
		set_err(p, "string contains a NUL byte");
		return AP_EINVAL;
	}
	struct ap_profile_priv *pv = p->priv;
	uint64_t h = hash_bytes(s, n);
	if (pv->str_cap) {
		size_t mask = pv->str_cap - 1;
		for (size_t i = (size_t)h & mask; pv->str_slots[i].idx;
		     i = (i + 1) & mask) {
			const char *t = p->strings[pv->str_slots[i].idx - 1];
			if (pv->str_slots[i].hash == h &&
			    (n == 0 || strncmp(t, s, n) == 0) && t[n] == '\0')
				return (int64_t)(pv->str_slots[i].idx - 1);
		}
	}
	int rc = reserve(p, &p->strings, &pv->cap_strings, p->nstrings + 1,
			 sizeof *p->strings);
	if (!rc)
		rc = str_reserve(p);
	if (rc)
		return rc;
	if (p->nstrings >= (size_t)INT64_MAX) {
		set_err(p, "too many strings");
		return AP_ERANGE;
	}
	char *copy = arena_alloc(p, n + 1);
	if (!copy)
		return AP_ENOMEM;
	if (n)
		memcpy(copy, s, n);
	copy[n] = '\0';
	str_put(pv, h, p->nstrings);
	p->strings[p->nstrings] = copy;
	return (int64_t)p->nstrings++;
}

int64_t ap_profile_intern(ap_profile *p, const char *s)
{
	if (!s)
		return AP_EINVAL;
	return ap_profile_intern_n(p, s, strlen(s));
}

const char *ap_profile_string(const ap_profile *p, int64_t i)
{
	if (!p || i < 0 || (uint64_t)i >= p->nstrings)
		return "";
	return p->strings[i];
}

static bool str_ok(const ap_profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < p->nstrings;
}

/* ---- create / destroy ------------------------------------------------ */

int ap_profile_create(const ap_allocator *alloc, ap_profile **out)
{
	if (!out)
		return AP_EINVAL;
	*out = NULL;
	if (!alloc)
		alloc = ap_allocator_libc();
	if (!alloc->alloc || !alloc->realloc || !alloc->free)
		return AP_EINVAL;
	struct profile_block *b = alloc->alloc(alloc->ctx, sizeof *b);
	if (!b)
		return AP_ENOMEM;
	memset(b, 0, sizeof *b);
	b->pub.priv = &b->priv;
	b->priv.a = *alloc;
	ap_profile *p = &b->pub;
	if (ap_profile_intern_n(p, "", 0) != 0) {
		ap_profile_destroy(p);
		return AP_ENOMEM;
	}
	*out = p;
	return 0;
}

void ap_profile_destroy(ap_profile *p)
{
	if (!p)
		return;
	struct ap_profile_priv *pv = p->priv;
	p_free(p, p->sample_types, pv->cap_sample_types * sizeof *p->sample_types);
	p_free(p, p->samples, pv->cap_samples * sizeof *p->samples);
	p_free(p, p->mappings, pv->cap_mappings * sizeof *p->mappings);
	p_free(p, p->locations, pv->cap_locations * sizeof *p->locations);
	p_free(p, p->functions, pv->cap_functions * sizeof *p->functions);
	p_free(p, p->strings, pv->cap_strings * sizeof *p->strings);
	p_free(p, p->comments, pv->cap_comments * sizeof *p->comments);
	p_free(p, p->exts, pv->cap_exts * sizeof *p->exts);
	p_free(p, pv->str_slots, pv->str_cap * sizeof *pv->str_slots);
	p_free(p, pv->mappings.slots, pv->mappings.cap * sizeof(struct id_slot));
	p_free(p, pv->locations.slots, pv->locations.cap * sizeof(struct id_slot));
	p_free(p, pv->functions.slots, pv->functions.cap * sizeof(struct id_slot));
	struct arena_chunk *c = pv->chunks;
	while (c) {
		struct arena_chunk *next = c->next;
		p_free(p, c, c->size);
		c = next;
	}
	ap_allocator a = pv->a;
	a.free(a.ctx, (struct profile_block *)p, sizeof(struct profile_block));
}

const ap_allocator *ap_profile_allocator(const ap_profile *p)
{
	return p ? &p->priv->a : ap_allocator_libc();
}

const char *ap_profile_error(const ap_profile *p)
{
	return p ? p->priv->err : "no profile";
}

/* ---- builders -------------------------------------------------------- */

int ap_profile_add_sample_type(ap_profile *p, const char *type,
			       const char *unit)
{
	if (!p || !type || !unit)
		return AP_EINVAL;
	if (p->nsamples) {
		set_err(p, "sample types must be added before samples");
		return AP_EINVAL;
	}
	if (p->nsample_types >= INT32_MAX) {
		set_err(p, "too many sample types");
		return AP_ERANGE;
	}
	int rc = reserve(p, &p->sample_types, &p->priv->cap_sample_types,
			 p->nsample_types + 1, sizeof *p->sample_types);
	if (rc)
		return rc;
	int64_t t = ap_profile_intern(p, type);
	if (t < 0)
		return (int)t;
	int64_t u = ap_profile_intern(p, unit);
	if (u < 0)
		return (int)u;
	p->sample_types[p->nsample_types].type = t;
	p->sample_types[p->nsample_types].unit = u;
	return (int)p->nsample_types++;
}

int ap_profile_find_sample_type(const ap_profile *p, const char *type)
{
	if (!p || !type)
		return AP_EINVAL;
	for (size_t i = 0; i < p->nsample_types; i++)
		if (!strcmp(ap_profile_string(p, p->sample_types[i].type), type))
			return (int)i;
	return AP_ENOTFOUND;
}

/*
 * Reference checks shared by the builders (reason into the profile's error
 * buffer) and ap_profile_validate (reason into the caller's): each returns
 * true when obj's references hold, else writes a reason to (err, errlen).
 */
__attribute__((format(printf, 3, 4)))
static bool reason(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return false;
}

static bool strs_ok(const ap_profile *p, const int64_t *idx, size_t n,
		    const char *what, unsigned long long id, char *err,
		    size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		if (!str_ok(p, idx[i]))
			return reason(err, errlen, "%s %llu: string index %lld "
				      "out of range (%zu strings)", what, id,
				      (long long)idx[i], p->nstrings);
	return true;
}

static bool mapping_ok(const ap_profile *p, const ap_mapping *m, char *err,
		       size_t errlen)
{
	int64_t s[] = { m->filename, m->build_id };
	return strs_ok(p, s, 2, "mapping", m->id, err, errlen);
}

static bool function_ok(const ap_profile *p, const ap_function *f, char *err,
			size_t errlen)
{
	int64_t s[] = { f->name, f->system_name, f->filename };
	return strs_ok(p, s, 3, "function", f->id, err, errlen);
}

static bool location_ok(const ap_profile *p, const ap_location *l, char *err,
			size_t errlen)
{
	unsigned long long id = l->id;
	if (l->mapping_id && !ap_profile_mapping(p, l->mapping_id))
		return reason(err, errlen, "location %llu references unknown "
			      "mapping %llu", id,
			      (unsigned long long)l->mapping_id);
	for (size_t j = 0; j < l->nlines; j++) {
		uint64_t f = l->lines[j].function_id;
		if (f && !ap_profile_function(p, f))
			return reason(err, errlen, "location %llu references "
				      "unknown function %llu", id,
				      (unsigned long long)f);
	}
	return true;
}

/* Sample number idx with these location ids and labels. */
static bool sample_ok(const ap_profile *p, size_t idx, const uint64_t *locs,
		      size_t nlocs, const ap_label *labels, size_t nlabels,
		      char *err, size_t errlen)
{
	for (size_t i = 0; i < nlocs; i++)
		if (!ap_profile_location(p, locs[i]))
			return reason(err, errlen, "sample %zu references "
				      "unknown location %llu", idx,
				      (unsigned long long)locs[i]);
	for (size_t i = 0; i < nlabels; i++) {
		int64_t st[] = { labels[i].key, labels[i].str,
				 labels[i].num_unit };
		if (!strs_ok(p, st, 3, "label of sample", idx, err, errlen))
			return false;
	}
	return true;
}

#define PERR(p) (p)->priv->err, sizeof (p)->priv->err

/*
 * Append a copy of obj (elem bytes; its first member is the uint64_t id) to
 * the array *arr_ptr of *n elements, claiming id in m. The caller has
 * checked every reference, so only a duplicate id or memory can fail here.
 */
static int add_object(ap_profile *p, struct id_map *m, const char *what,
		      void *arr_ptr, size_t *n, size_t *cap, const void *obj,
		      size_t elem, uint64_t *id_out)
{
	uint64_t id;
	memcpy(&id, obj, sizeof id);
	int rc = id_claim(p, m, what, &id);
	if (!rc)
		rc = reserve(p, arr_ptr, cap, *n + 1, elem);
	if (rc)
		return rc;
	char *dst = *(char **)arr_ptr + *n * elem;
	memcpy(dst, obj, elem);
	memcpy(dst, &id, sizeof id);
	id_commit(m, id, (*n)++);
	if (id_out)
		*id_out = id;
	return 0;
}

int ap_profile_add_mapping(ap_profile *p, const ap_mapping *m,
			   uint64_t *id_out)
{
	if (!p || !m)
		return AP_EINVAL;
	if (!mapping_ok(p, m, PERR(p)))
		return AP_EINVAL;
	return add_object(p, &p->priv->mappings, "mapping", &p->mappings,
			  &p->nmappings, &p->priv->cap_mappings, m, sizeof *m,
			  id_out);
}

int ap_profile_add_function(ap_profile *p, const ap_function *f,
			    uint64_t *id_out)
{
	if (!p || !f)
		return AP_EINVAL;
	if (!function_ok(p, f, PERR(p)))
		return AP_EINVAL;
	return add_object(p, &p->priv->functions, "function", &p->functions,
			  &p->nfunctions, &p->priv->cap_functions, f, sizeof *f,
			  id_out);
}

int ap_profile_add_location(ap_profile *p, const ap_location *loc,
			    uint64_t *id_out)
{
	if (!p || !loc || (loc->nlines && !loc->lines))
		return AP_EINVAL;
	if (!location_ok(p, loc, PERR(p)))
		return AP_EINVAL;
	if (loc->nlines > SIZE_MAX / sizeof(ap_line)) {
		set_err(p, "location %llu has too many lines",
			(unsigned long long)loc->id);
		return AP_ERANGE;
	}
	ap_location copy = *loc;
	copy.lines = NULL;
	if (loc->nlines) {
		copy.lines = arena_alloc(p, loc->nlines * sizeof *copy.lines);
		if (!copy.lines)
			return AP_ENOMEM;
		memcpy(copy.lines, loc->lines, loc->nlines * sizeof *copy.lines);
	}
	return add_object(p, &p->priv->locations, "location", &p->locations,
			  &p->nlocations, &p->priv->cap_locations, &copy,
			  sizeof copy, id_out);
}

/* Sizes of a sample's arena block: values, then location ids, then labels. */
static int sample_block_size(size_t nvals, size_t nlocs, size_t nlabels,
			     size_t *out)
{
	if (nvals > SIZE_MAX / 8 / 4 || nlocs > SIZE_MAX / 8 / 4 ||
	    nlabels > SIZE_MAX / sizeof(ap_label) / 4)
		return AP_ERANGE;
	*out = nvals * 8 + nlocs * 8 + nlabels * sizeof(ap_label);
	return 0;
}

int ap_profile_add_sample(ap_profile *p, const uint64_t *locs, size_t nlocs,
			  const int64_t *values, const ap_label *labels,
			  size_t nlabels)
{
	if (!p || (nlocs && !locs) || (p->nsample_types && !values) ||
	    (nlabels && !labels))
		return AP_EINVAL;
	size_t idx = p->nsamples;
	if (!sample_ok(p, idx, locs, nlocs, labels, nlabels, PERR(p)))
		return AP_EINVAL;
	size_t size;
	if (sample_block_size(p->nsample_types, nlocs, nlabels, &size)) {
		set_err(p, "sample %zu is too large", idx);
		return AP_ERANGE;
	}
	int rc = reserve(p, &p->samples, &p->priv->cap_samples, idx + 1,
			 sizeof *p->samples);
	if (rc)
		return rc;
	char *block = arena_alloc(p, size);
	if (!block)
		return AP_ENOMEM;
	ap_sample *s = &p->samples[idx];
	s->values = (int64_t *)(void *)block;
	s->location_ids = (uint64_t *)(void *)(block + p->nsample_types * 8);
	s->labels = (ap_label *)(void *)(block + p->nsample_types * 8 + nlocs * 8);
	s->nlocations = nlocs;
	s->nlabels = nlabels;
	if (p->nsample_types)
		memcpy(s->values, values, p->nsample_types * 8);
	if (nlocs)
		memcpy(s->location_ids, locs, nlocs * 8);
	if (nlabels)
		memcpy(s->labels, labels, nlabels * sizeof *labels);
	p->nsamples++;
	return 0;
}

int ap_profile_add_comment(ap_profile *p, const char *comment)
{
	if (!p || !comment)
		return AP_EINVAL;
	int rc = reserve(p, &p->comments, &p->priv->cap_comments,
			 p->ncomments + 1, sizeof *p->comments);
	if (rc)
		return rc;
	int64_t s = ap_profile_intern(p, comment);
	if (s < 0)
		return (int)s;
	p->comments[p->ncomments++] = s;
	return 0;
}

/* Printable ASCII without spaces, 1..AP_PROFILE_EXT_NAME_MAX bytes. */
static bool ext_name_ok(const char *name)
{
	size_t n = 0;
	for (; name[n]; n++)
		if (n >= AP_PROFILE_EXT_NAME_MAX || name[n] <= ' ' || name[n] > '~')
			return false;
	return n > 0;
}

int ap_profile_ext_add(ap_profile *p, const char *name, const void *data,
		       size_t len)
{
	if (!p || !name || (!data && len))
		return AP_EINVAL;
	if (!ext_name_ok(name)) {
		set_err(p, "extension name is empty, too long or not printable");
		return AP_EINVAL;
	}
	int rc = reserve(p, &p->exts, &p->priv->cap_exts, p->nexts + 1,
			 sizeof *p->exts);
	if (rc)
		return rc;
	size_t nlen = strlen(name) + 1;
	char *n = arena_alloc(p, nlen);
	unsigned char *d = arena_alloc(p, len ? len : 1);
	if (!n || !d)
		return AP_ENOMEM;
	memcpy(n, name, nlen);
	if (len)
		memcpy(d, data, len);
	p->exts[p->nexts++] = (ap_profile_ext){ n, d, len };
	return 0;
}

const ap_profile_ext *ap_profile_ext_next(const ap_profile *p, const char *name,
					  bool prefix, size_t *cursor)
{
	if (!p || !name || !cursor)
		return NULL;
	size_t nlen = strlen(name);
	for (size_t i = *cursor; i < p->nexts; i++) {
		const char *e = p->exts[i].name;
		if (prefix ? strncmp(e, name, nlen) == 0 : strcmp(e, name) == 0) {
			*cursor = i + 1;
			return &p->exts[i];
		}
	}
	*cursor = p->nexts;
	return NULL;
}

/* ---- lookups --------------------------------------------------------- */

const ap_mapping *ap_profile_mapping(const ap_profile *p, uint64_t id)
{
	const struct id_slot *s = p ? id_find(&p->priv->mappings, id) : NULL;
	return s ? &p->mappings[s->idx] : NULL;
}

const ap_location *ap_profile_location(const ap_profile *p, uint64_t id)
{
	const struct id_slot *s = p ? id_find(&p->priv->locations, id) : NULL;
	return s ? &p->locations[s->idx] : NULL;
}

const ap_function *ap_profile_function(const ap_profile *p, uint64_t id)
{
	const struct id_slot *s = p ? id_find(&p->priv->functions, id) : NULL;
	return s ? &p->functions[s->idx] : NULL;
}

/* ---- validation ------------------------------------------------------ */

/* Each object is found under its own id: ids are nonzero and unique. */
static int validate_objects(const ap_profile *p, char *err, size_t errlen)
{
	for (size_t i = 0; i < p->nmappings; i++) {
		const ap_mapping *m = &p->mappings[i];
		if (ap_profile_mapping(p, m->id) != m)
			return reason(err, errlen, "mapping %zu has id %llu that "
				      "is zero or not unique", i,
				      (unsigned long long)m->id), AP_ECORRUPT;
		if (!mapping_ok(p, m, err, errlen))
			return AP_ECORRUPT;
	}
	for (size_t i = 0; i < p->nfunctions; i++) {
		const ap_function *f = &p->functions[i];
		if (ap_profile_function(p, f->id) != f)
			return reason(err, errlen, "function %zu has id %llu that "
				      "is zero or not unique", i,
				      (unsigned long long)f->id), AP_ECORRUPT;
		if (!function_ok(p, f, err, errlen))
			return AP_ECORRUPT;
	}
	for (size_t i = 0; i < p->nlocations; i++) {
		const ap_location *l = &p->locations[i];
		if (ap_profile_location(p, l->id) != l)
			return reason(err, errlen, "location %zu has id %llu that "
				      "is zero or not unique", i,
				      (unsigned long long)l->id), AP_ECORRUPT;
		if (!location_ok(p, l, err, errlen))
			return AP_ECORRUPT;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const ap_sample *s = &p->samples[i];
		if (p->nsample_types && !s->values)
			return reason(err, errlen, "sample %zu has no values", i),
			       AP_ECORRUPT;
		if (!sample_ok(p, i, s->location_ids, s->nlocations, s->labels,
			       s->nlabels, err, errlen))
			return AP_ECORRUPT;
	}
	return 0;
}

int ap_profile_validate(const ap_profile *p, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!p)
		return reason(err, errlen, "no profile"), AP_ECORRUPT;
	if (!p->nstrings || p->strings[0][0] != '\0')
		return reason(err, errlen, "string table entry 0 is not empty"),
		       AP_ECORRUPT;
	for (size_t i = 0; i < p->nsample_types; i++) {
		int64_t st[] = { p->sample_types[i].type, p->sample_types[i].unit };
		if (!strs_ok(p, st, 2, "sample type", i, err, errlen))
			return AP_ECORRUPT;
	}
	const int64_t top[] = { p->drop_frames, p->keep_frames,
				p->period_type.type, p->period_type.unit,
				p->default_sample_type, p->doc_url };
	static const char *const names[] = { "drop_frames", "keep_frames",
					     "period_type.type",
					     "period_type.unit",
					     "default_sample_type", "doc_url" };
	for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
		if (!str_ok(p, top[i]))
			return reason(err, errlen, "%s: string index %lld out of "
				      "range (%zu strings)", names[i],
				      (long long)top[i], p->nstrings),
			       AP_ECORRUPT;
	for (size_t i = 0; i < p->ncomments; i++)
		if (!strs_ok(p, &p->comments[i], 1, "comment", i, err, errlen))
			return AP_ECORRUPT;
	return validate_objects(p, err, errlen);
}
