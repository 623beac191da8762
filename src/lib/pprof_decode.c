/*
 * pprof_decode.c: reads a pprof Profile message (google/pprof
 * proto/profile.proto; field numbers in docs/FORMATS.md), plain or gzip'd,
 * into an ap_profile.
 *
 * Hostile input is the normal case: every length is bounded by its enclosing
 * message, gzip output is capped, unknown fields of every wire type are
 * skipped, ids of 0 and duplicates are rejected, and every failure carries a
 * one-line reason. Protobuf fields may come in any order, so the top-level
 * message is walked in passes, each adding what the next one references:
 * strings; then sample types, mappings, functions and scalars; then
 * locations; then samples. String indices are re-mapped through the
 * profile's interning (a wire table with duplicate strings decodes to a
 * smaller table that means the same).
 *
 * ap_profile_decode_any, the one entry point for a profile of any supported
 * format, lives here too: it unzips once and hands text profiles to the
 * heap_v2 decoder (heapv2.c), everything else to the pprof decoder.
 */
#include "allocprof/codec.h"
#include "allocprof/heapv2.h"
#include "allocprof/profile.h"
#include "protobuf.h"

#include <stdio.h>
#include <string.h>

/* Largest protobuf payload accepted (after decompression): 1 GiB. */
#define MAX_PROFILE_BYTES ((size_t)1 << 30)

struct vec {
	void *data;
	size_t n, cap;
};

struct dec {
	ap_profile *p;
	const ap_allocator *a;
	char *err;
	size_t errlen;
	int64_t *strmap; /* wire string index -> profile string index */
	size_t nstr, capstr;
	size_t nsample; /* samples seen so far, for reasons */
	struct vec locs, vals, labels, lines;
};

static int push(struct dec *d, struct vec *v, const void *x, size_t elem)
{
	if (v->n == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 16;
		if (ncap > SIZE_MAX / elem)
			return AP_ERANGE;
		void *n = v->data
			? d->a->realloc(d->a->ctx, v->data, v->cap * elem,
					ncap * elem)
			: d->a->alloc(d->a->ctx, ncap * elem);
		if (!n)
			return AP_ENOMEM;
		v->data = n;
		v->cap = ncap;
	}
	memcpy((char *)v->data + v->n * elem, x, elem);
	v->n++;
	return 0;
}

static void vec_free(struct dec *d, struct vec *v, size_t elem)
{
	if (v->data)
		d->a->free(d->a->ctx, v->data, v->cap * elem);
}

/* A builder failed: AP_EINVAL/AP_ERANGE mean the input is inconsistent. */
static int builder_fail(struct dec *d, int rc)
{
	if (rc == AP_ENOMEM)
		return rc;
	if (d->err && d->errlen)
		snprintf(d->err, d->errlen, "%s", ap_profile_error(d->p));
	return AP_ECORRUPT;
}

/* Map a wire string index into the profile's table. */
static int map_str(struct dec *d, pb_reader *r, uint64_t wire, const char *what,
		   int64_t *out)
{
	if (wire == 0 && d->nstr == 0) {
		*out = 0;
		return 0;
	}
	if (wire >= d->nstr)
		return apx_pb_fail(r, "%s: string index %lld out of range (%zu "
			       "strings) before offset %zu", what,
			       (long long)(int64_t)wire, d->nstr,
			       apx_pb_offset(r));
	*out = d->strmap[wire];
	return 0;
}

static int get_u64(pb_reader *r, enum pb_wire wt, const char *what,
		   uint64_t *v)
{
	int rc = apx_pb_expect(r, wt, PB_VARINT, what);
	return rc ? rc : apx_pb_get_varint(r, v);
}

static int get_i64(pb_reader *r, enum pb_wire wt, const char *what,
		   int64_t *v)
{
	uint64_t u;
	int rc = get_u64(r, wt, what, &u);
	if (!rc)
		*v = (int64_t)u;
	return rc;
}

static int get_str(struct dec *d, pb_reader *r, enum pb_wire wt,
		   const char *what, int64_t *out)
{
	uint64_t v;
	int rc = get_u64(r, wt, what, &v);
	return rc ? rc : map_str(d, r, v, what, out);
}

static int get_bool(pb_reader *r, enum pb_wire wt, const char *what, bool *b)
{
	uint64_t v;
	int rc = get_u64(r, wt, what, &v);
	if (!rc)
		*b = v != 0;
	return rc;
}

/* ---- pass 1: the string table ---------------------------------------- */

static int add_string(struct dec *d, pb_reader *r, enum pb_wire wt)
{
	pb_reader s = { 0 };
	int rc = apx_pb_open(r, wt, "string_table entry", &s);
	if (rc)
		return rc;
	if (d->nstr == 0 && s.len != 0)
		return apx_pb_fail(r, "string_table[0] must be empty, has %zu "
			       "bytes at offset %zu", s.len, s.base);
	if (memchr(s.p, '\0', s.len))
		return apx_pb_fail(r, "string_table[%zu] at offset %zu contains a "
			       "NUL byte", d->nstr, s.base);
	int64_t idx = ap_profile_intern_n(d->p, (const char *)s.p, s.len);
	if (idx < 0)
		return builder_fail(d, (int)idx);
	if (d->nstr == d->capstr) {
		size_t ncap = d->capstr ? d->capstr * 2 : 64;
		void *n = d->strmap
			? d->a->realloc(d->a->ctx, d->strmap,
					d->capstr * sizeof *d->strmap,
					ncap * sizeof *d->strmap)
			: d->a->alloc(d->a->ctx, ncap * sizeof *d->strmap);
		if (!n)
			return AP_ENOMEM;
		d->strmap = n;
		d->capstr = ncap;
	}
	d->strmap[d->nstr++] = idx;
	return 0;
}

/* ---- pass 2: sample types, mappings, functions, scalars -------------- */

/* Field handlers get the decoder and the object being filled. */
struct msg {
	struct dec *d;
	void *obj;
};

static int value_type_field(void *ctx, pb_reader *m, uint32_t f,
			    enum pb_wire wt)
{
	struct msg *c = ctx;
	ap_value_type *vt = c->obj;
	if (f == 1)
		return get_str(c->d, m, wt, "value type", &vt->type);
	if (f == 2)
		return get_str(c->d, m, wt, "value type unit", &vt->unit);
	return apx_pb_skip(m, f, wt);
}

static int get_value_type(struct dec *d, pb_reader *r, enum pb_wire wt,
			  const char *what, ap_value_type *vt)
{
	pb_reader m = { 0 };
	struct msg c = { d, vt };
	int rc = apx_pb_open(r, wt, what, &m);
	return rc ? rc : apx_pb_fields(&m, value_type_field, &c);
}

static int add_sample_type(struct dec *d, pb_reader *r, enum pb_wire wt)
{
	ap_value_type vt = { 0, 0 };
	int rc = get_value_type(d, r, wt, "sample_type", &vt);
	if (rc)
		return rc;
	rc = ap_profile_add_sample_type(d->p, ap_profile_string(d->p, vt.type),
					ap_profile_string(d->p, vt.unit));
	return rc < 0 ? builder_fail(d, rc) : 0;
}

static int mapping_field(void *ctx, pb_reader *m, uint32_t f, enum pb_wire wt)
{
	struct msg *c = ctx;
	ap_mapping *mp = c->obj;
	switch (f) {
	case 1: return get_u64(m, wt, "mapping id", &mp->id);
	case 2: return get_u64(m, wt, "mapping memory_start", &mp->memory_start);
	case 3: return get_u64(m, wt, "mapping memory_limit", &mp->memory_limit);
	case 4: return get_u64(m, wt, "mapping file_offset", &mp->file_offset);
	case 5: return get_str(c->d, m, wt, "mapping filename", &mp->filename);
	case 6: return get_str(c->d, m, wt, "mapping build_id", &mp->build_id);
	case 7: return get_bool(m, wt, "mapping has_functions", &mp->has_functions);
	case 8: return get_bool(m, wt, "mapping has_filenames", &mp->has_filenames);
	case 9: return get_bool(m, wt, "mapping has_line_numbers", &mp->has_line_numbers);
	case 10: return get_bool(m, wt, "mapping has_inline_frames", &mp->has_inline_frames);
	default: return apx_pb_skip(m, f, wt);
	}
}

static int function_field(void *ctx, pb_reader *m, uint32_t f, enum pb_wire wt)
{
	struct msg *c = ctx;
	ap_function *fn = c->obj;
	switch (f) {
	case 1: return get_u64(m, wt, "function id", &fn->id);
	case 2: return get_str(c->d, m, wt, "function name", &fn->name);
	case 3: return get_str(c->d, m, wt, "function system_name", &fn->system_name);
	case 4: return get_str(c->d, m, wt, "function filename", &fn->filename);
	case 5: return get_i64(m, wt, "function start_line", &fn->start_line);
	default: return apx_pb_skip(m, f, wt);
	}
}

/*
 * Read one mapping, function or location (obj, whose first member is its
 * uint64_t id) with handler fn, then reject id 0. The builder rejects
 * duplicates and dangling references.
 */
static int get_object(struct dec *d, pb_reader *r, enum pb_wire wt,
		      const char *what, pb_field_fn fn, void *obj)
{
	pb_reader m = { 0 };
	struct msg c = { d, obj };
	int rc = apx_pb_open(r, wt, what, &m);
	if (!rc)
		rc = apx_pb_fields(&m, fn, &c);
	uint64_t id;
	memcpy(&id, obj, sizeof id);
	if (!rc && !id)
		rc = apx_pb_fail(r, "%s at offset %zu has id 0", what, m.base);
	return rc;
}

static int push_comment(void *ctx, uint64_t v)
{
	struct dec *d = ctx;
	pb_reader none = { .err = d->err, .errlen = d->errlen };
	int64_t s = 0;
	int rc = map_str(d, &none, v, "comment", &s);
	if (rc)
		return rc;
	rc = ap_profile_add_comment(d->p, ap_profile_string(d->p, s));
	return rc ? builder_fail(d, rc) : 0;
}

/* An allocprof extension (AP_PPROF_EXT_FIELD): name (1) and data (2). */
struct ext_msg {
	pb_reader name, data;
	bool has_name;
};

static int ext_field(void *ctx, pb_reader *m, uint32_t f, enum pb_wire wt)
{
	struct ext_msg *e = ctx;
	if (f == 1) {
		e->has_name = true;
		return apx_pb_open(m, wt, "extension name", &e->name);
	}
	if (f == 2)
		return apx_pb_open(m, wt, "extension data", &e->data);
	return apx_pb_skip(m, f, wt);
}

static int add_ext(struct dec *d, pb_reader *r, enum pb_wire wt)
{
	pb_reader m = { 0 };
	struct ext_msg e = { { 0 }, { 0 }, false };
	int rc = apx_pb_open(r, wt, "extension", &m);
	if (!rc)
		rc = apx_pb_fields(&m, ext_field, &e);
	if (rc)
		return rc;
	char name[AP_PROFILE_EXT_NAME_MAX + 1];
	if (!e.has_name || e.name.len == 0 || e.name.len > AP_PROFILE_EXT_NAME_MAX)
		return apx_pb_fail(r, "extension at offset %zu has no name or "
			       "one over %d bytes", m.base, AP_PROFILE_EXT_NAME_MAX);
	memcpy(name, e.name.p, e.name.len);
	name[e.name.len] = '\0';
	rc = ap_profile_ext_add(d->p, name, e.data.p, e.data.len);
	if (rc == AP_EINVAL)
		return apx_pb_fail(r, "extension at offset %zu has a name that is "
			       "not printable ASCII", m.base);
	return rc ? builder_fail(d, rc) : 0;
}

static int pass_defs(void *ctx, pb_reader *r, uint32_t f, enum pb_wire wt)
{
	struct dec *d = ctx;
	ap_profile *p = d->p;
	ap_mapping mp;
	ap_function fn;
	int rc;
	switch (f) {
	case 1: return add_sample_type(d, r, wt);
	case 3:
		memset(&mp, 0, sizeof mp);
		rc = get_object(d, r, wt, "mapping", mapping_field, &mp);
		if (!rc && (rc = ap_profile_add_mapping(p, &mp, NULL)))
			rc = builder_fail(d, rc);
		return rc;
	case 5:
		memset(&fn, 0, sizeof fn);
		rc = get_object(d, r, wt, "function", function_field, &fn);
		if (!rc && (rc = ap_profile_add_function(p, &fn, NULL)))
			rc = builder_fail(d, rc);
		return rc;
	case 7: return get_str(d, r, wt, "drop_frames", &p->drop_frames);
	case 8: return get_str(d, r, wt, "keep_frames", &p->keep_frames);
	case 9: return get_i64(r, wt, "time_nanos", &p->time_nanos);
	case 10: return get_i64(r, wt, "duration_nanos", &p->duration_nanos);
	case 11: return get_value_type(d, r, wt, "period_type", &p->period_type);
	case 12: return get_i64(r, wt, "period", &p->period);
	case 13: return apx_pb_get_repeated(r, wt, "comment", push_comment, d);
	case 14:
		return get_str(d, r, wt, "default_sample_type",
			       &p->default_sample_type);
	case 15: return get_str(d, r, wt, "doc_url", &p->doc_url);
	case AP_PPROF_EXT_FIELD: return add_ext(d, r, wt);
	default: return apx_pb_skip(r, f, wt);
	}
}

/* ---- pass 3: locations ----------------------------------------------- */

static int line_field(void *ctx, pb_reader *m, uint32_t f, enum pb_wire wt)
{
	ap_line *ln = ctx;
	switch (f) {
	case 1: return get_u64(m, wt, "line function_id", &ln->function_id);
	case 2: return get_i64(m, wt, "line line", &ln->line);
	case 3: return get_i64(m, wt, "line column", &ln->column);
	default: return apx_pb_skip(m, f, wt);
	}
}

static int location_field(void *ctx, pb_reader *m, uint32_t f,
			  enum pb_wire wt)
{
	struct msg *c = ctx;
	ap_location *loc = c->obj;
	ap_line ln = { 0, 0, 0 };
	pb_reader lm = { 0 };
	int rc;
	switch (f) {
	case 1: return get_u64(m, wt, "location id", &loc->id);
	case 2: return get_u64(m, wt, "location mapping_id", &loc->mapping_id);
	case 3: return get_u64(m, wt, "location address", &loc->address);
	case 4:
		rc = apx_pb_open(m, wt, "location line", &lm);
		if (!rc)
			rc = apx_pb_fields(&lm, line_field, &ln);
		return rc ? rc : push(c->d, &c->d->lines, &ln, sizeof ln);
	case 5: return get_bool(m, wt, "location is_folded", &loc->is_folded);
	default: return apx_pb_skip(m, f, wt);
	}
}

static int pass_locations(void *ctx, pb_reader *r, uint32_t f,
			  enum pb_wire wt)
{
	struct dec *d = ctx;
	if (f != 4)
		return apx_pb_skip(r, f, wt);
	ap_location loc;
	memset(&loc, 0, sizeof loc);
	d->lines.n = 0;
	int rc = get_object(d, r, wt, "location", location_field, &loc);
	if (rc)
		return rc;
	loc.lines = d->lines.data;
	loc.nlines = d->lines.n;
	rc = ap_profile_add_location(d->p, &loc, NULL);
	return rc ? builder_fail(d, rc) : 0;
}

/* ---- pass 4: samples ------------------------------------------------- */

static int push_loc(void *ctx, uint64_t v)
{
	struct dec *d = ctx;
	return push(d, &d->locs, &v, sizeof v);
}

static int push_val(void *ctx, uint64_t v)
{
	struct dec *d = ctx;
	int64_t x = (int64_t)v;
	return push(d, &d->vals, &x, sizeof x);
}

static int label_field(void *ctx, pb_reader *m, uint32_t f, enum pb_wire wt)
{
	struct msg *c = ctx;
	ap_label *l = c->obj;
	switch (f) {
	case 1: return get_str(c->d, m, wt, "label key", &l->key);
	case 2: return get_str(c->d, m, wt, "label str", &l->str);
	case 3: return get_i64(m, wt, "label num", &l->num);
	case 4: return get_str(c->d, m, wt, "label num_unit", &l->num_unit);
	default: return apx_pb_skip(m, f, wt);
	}
}

static int sample_field(void *ctx, pb_reader *m, uint32_t f, enum pb_wire wt)
{
	struct dec *d = ctx;
	ap_label l = { 0, 0, 0, 0 };
	struct msg c = { d, &l };
	pb_reader lm = { 0 };
	int rc;
	switch (f) {
	case 1:
		return apx_pb_get_repeated(m, wt, "sample location_id", push_loc, d);
	case 2: return apx_pb_get_repeated(m, wt, "sample value", push_val, d);
	case 3:
		rc = apx_pb_open(m, wt, "sample label", &lm);
		if (!rc)
			rc = apx_pb_fields(&lm, label_field, &c);
		return rc ? rc : push(d, &d->labels, &l, sizeof l);
	default: return apx_pb_skip(m, f, wt);
	}
}

static int pass_samples(void *ctx, pb_reader *r, uint32_t f, enum pb_wire wt)
{
	struct dec *d = ctx;
	if (f != 2)
		return apx_pb_skip(r, f, wt);
	pb_reader m = { 0 };
	d->locs.n = d->vals.n = d->labels.n = 0;
	int rc = apx_pb_open(r, wt, "sample", &m);
	if (!rc)
		rc = apx_pb_fields(&m, sample_field, d);
	if (rc)
		return rc;
	if (d->vals.n != d->p->nsample_types)
		return apx_pb_fail(r, "sample %zu at offset %zu has %zu values, "
			       "expected %zu (one per sample type)", d->nsample,
			       m.base, d->vals.n, d->p->nsample_types);
	rc = ap_profile_add_sample(d->p, d->locs.data, d->locs.n,
				   d->vals.data, d->labels.data, d->labels.n);
	d->nsample++;
	return rc ? builder_fail(d, rc) : 0;
}

/* ---- driver ---------------------------------------------------------- */

static int pass_strings(void *ctx, pb_reader *r, uint32_t f, enum pb_wire wt)
{
	return f == 6 ? add_string(ctx, r, wt) : apx_pb_skip(r, f, wt);
}

static int decode_message(struct dec *d, const unsigned char *buf, size_t len)
{
	static const pb_field_fn passes[] = { pass_strings, pass_defs,
					      pass_locations, pass_samples };
	for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
		pb_reader r = { buf, len, 0, 0, d->err, d->errlen };
		int rc = apx_pb_fields(&r, passes[i], d);
		if (rc)
			return rc;
	}
	return 0;
}

int ap_pprof_decode(const unsigned char *buf, size_t len,
		    const ap_allocator *alloc, ap_profile **out, char *err,
		    size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!out || (!buf && len))
		return AP_EINVAL;
	*out = NULL;
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	unsigned char *plain;
	size_t plain_len;
	int rc = ap_gzip_input(buf, len, MAX_PROFILE_BYTES, a, &buf, &len,
			       &plain, &plain_len, err, errlen);
	if (rc)
		return rc;
	struct dec d;
	memset(&d, 0, sizeof d);
	d.a = a;
	d.err = err;
	d.errlen = errlen;
	rc = ap_profile_create(a, &d.p);
	if (!rc)
		rc = decode_message(&d, buf, len);
	if (!rc)
		rc = ap_profile_validate(d.p, err, errlen);
	if (d.strmap)
		a->free(a->ctx, d.strmap, d.capstr * sizeof *d.strmap);
	vec_free(&d, &d.locs, sizeof(uint64_t));
	vec_free(&d, &d.vals, sizeof(int64_t));
	vec_free(&d, &d.labels, sizeof(ap_label));
	vec_free(&d, &d.lines, sizeof(ap_line));
	if (plain)
		a->free(a->ctx, plain, plain_len + 1);
	if (rc) {
		if (rc == AP_ENOMEM && err && errlen)
			snprintf(err, errlen, "out of memory");
		ap_profile_destroy(d.p);
		return rc;
	}
	*out = d.p;
	return 0;
}

/* Unzip once so neither decoder inflates again; then sniff the header. */
int ap_profile_decode_any(const unsigned char *buf, size_t len,
			  const ap_allocator *alloc, ap_profile **out,
			  bool *is_text, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!out || (!buf && len))
		return AP_EINVAL;
	*out = NULL;
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	unsigned char *plain;
	size_t plain_len;
	int rc = ap_gzip_input(buf, len, MAX_PROFILE_BYTES, a, &buf, &len, &plain,
			       &plain_len, err, errlen);
	if (rc)
		return rc;
	bool text = (len >= 8 && !memcmp(buf, "heap_v2/", 8)) ||
		    (len >= 13 && !memcmp(buf, "heap profile:", 13));
	if (is_text)
		*is_text = text;
	rc = text ? ap_heapv2_decode(buf, len, alloc, out, err, errlen)
		  : ap_pprof_decode(buf, len, alloc, out, err, errlen);
	if (plain)
		a->free(a->ctx, plain, plain_len + 1);
	return rc;
}
