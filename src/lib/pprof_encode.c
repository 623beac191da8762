/*
 * pprof_encode.c: writes an ap_profile as a pprof Profile message
 * (google/pprof proto/profile.proto, proto3 wire format; field numbers in
 * docs/FORMATS.md), optionally gzip'd as pprof files usually are.
 *
 * Fields are written in field-number order, proto3 zero scalars omitted,
 * repeated scalars packed, every string_table entry written (entry 0 is "").
 * The profile is validated first so a reader never sees a dangling id.
 */
#include "allocprof/codec.h"
#include "allocprof/profile.h"
#include "gzstream.h"
#include "protobuf.h"

#include <string.h>

/* Profile field numbers. */
enum {
	F_SAMPLE_TYPE = 1, F_SAMPLE = 2, F_MAPPING = 3, F_LOCATION = 4,
	F_FUNCTION = 5, F_STRING_TABLE = 6, F_DROP_FRAMES = 7,
	F_KEEP_FRAMES = 8, F_TIME_NANOS = 9, F_DURATION_NANOS = 10,
	F_PERIOD_TYPE = 11, F_PERIOD = 12, F_COMMENT = 13,
	F_DEFAULT_SAMPLE_TYPE = 14, F_DOC_URL = 15
};

static void put_i64(pb_writer *w, uint32_t field, int64_t v)
{
	apx_pb_put_uint_field(w, field, (uint64_t)v);
}

static void put_value_type(pb_writer *w, uint32_t field, const ap_value_type *t)
{
	size_t m = apx_pb_begin_msg(w, field);
	put_i64(w, 1, t->type);
	put_i64(w, 2, t->unit);
	apx_pb_end_msg(w, m);
}

/* Packed int64s: the same varints as uint64 (two's complement). */
static void put_packed_i64(pb_writer *w, uint32_t field, const int64_t *v,
			   size_t n)
{
	if (!n)
		return;
	size_t m = apx_pb_begin_msg(w, field);
	for (size_t i = 0; i < n; i++)
		apx_pb_put_varint(w, (uint64_t)v[i]);
	apx_pb_end_msg(w, m);
}

static void put_sample(pb_writer *w, const ap_profile *p, const ap_sample *s)
{
	size_t m = apx_pb_begin_msg(w, F_SAMPLE);
	apx_pb_put_packed(w, 1, s->location_ids, s->nlocations);
	put_packed_i64(w, 2, s->values, p->nsample_types);
	for (size_t i = 0; i < s->nlabels; i++) {
		const ap_label *l = &s->labels[i];
		size_t lm = apx_pb_begin_msg(w, 3);
		put_i64(w, 1, l->key);
		put_i64(w, 2, l->str);
		put_i64(w, 3, l->num);
		put_i64(w, 4, l->num_unit);
		apx_pb_end_msg(w, lm);
	}
	apx_pb_end_msg(w, m);
}

static void put_mapping(pb_writer *w, const ap_mapping *mp)
{
	size_t m = apx_pb_begin_msg(w, F_MAPPING);
	apx_pb_put_uint_field(w, 1, mp->id);
	apx_pb_put_uint_field(w, 2, mp->memory_start);
	apx_pb_put_uint_field(w, 3, mp->memory_limit);
	apx_pb_put_uint_field(w, 4, mp->file_offset);
	put_i64(w, 5, mp->filename);
	put_i64(w, 6, mp->build_id);
	apx_pb_put_uint_field(w, 7, mp->has_functions);
	apx_pb_put_uint_field(w, 8, mp->has_filenames);
	apx_pb_put_uint_field(w, 9, mp->has_line_numbers);
	apx_pb_put_uint_field(w, 10, mp->has_inline_frames);
	apx_pb_end_msg(w, m);
}

static void put_location(pb_writer *w, const ap_location *l)
{
	size_t m = apx_pb_begin_msg(w, F_LOCATION);
	apx_pb_put_uint_field(w, 1, l->id);
	apx_pb_put_uint_field(w, 2, l->mapping_id);
	apx_pb_put_uint_field(w, 3, l->address);
	for (size_t i = 0; i < l->nlines; i++) {
		size_t lm = apx_pb_begin_msg(w, 4);
		apx_pb_put_uint_field(w, 1, l->lines[i].function_id);
		put_i64(w, 2, l->lines[i].line);
		put_i64(w, 3, l->lines[i].column);
		apx_pb_end_msg(w, lm);
	}
	apx_pb_put_uint_field(w, 5, l->is_folded);
	apx_pb_end_msg(w, m);
}

static void put_function(pb_writer *w, const ap_function *f)
{
	size_t m = apx_pb_begin_msg(w, F_FUNCTION);
	apx_pb_put_uint_field(w, 1, f->id);
	put_i64(w, 2, f->name);
	put_i64(w, 3, f->system_name);
	put_i64(w, 4, f->filename);
	put_i64(w, 5, f->start_line);
	apx_pb_end_msg(w, m);
}

/*
 * Where put_profile's bytes go. Without a sink the whole message builds up
 * in the writer. With one, each top-level field is handed to it as soon as
 * it is written and the writer emptied, so the writer holds one field at a
 * time; an extension's payload (the runtime's lifetimes can be hundreds of
 * KB) goes to the sink straight from the profile, never copied.
 */
typedef struct pb_sink {
	void (*put)(void *ctx, const void *b, size_t n);
	void *ctx;
} pb_sink;

static void flush(pb_writer *w, const pb_sink *s)
{
	if (!s || w->err)
		return;
	s->put(s->ctx, w->data, w->len);
	w->len = 0;
}

/* Bytes of a length-delimited field of n payload bytes. */
static size_t len_field_size(uint32_t field, size_t n)
{
	return apx_pb_varint_len((uint64_t)field << 3 | PB_LEN) + apx_pb_varint_len(n) + n;
}

static void put_ext(pb_writer *w, const ap_profile_ext *e, const pb_sink *s)
{
	size_t nlen = strlen(e->name);
	if (!s) {
		size_t m = apx_pb_begin_msg(w, AP_PPROF_EXT_FIELD);
		apx_pb_put_bytes_field(w, 1, e->name, nlen);
		apx_pb_put_bytes_field(w, 2, e->data, e->len);
		apx_pb_end_msg(w, m);
		return;
	}
	/* The same bytes: the message's length first, then the data. */
	apx_pb_put_tag(w, AP_PPROF_EXT_FIELD, PB_LEN);
	apx_pb_put_varint(w, len_field_size(1, nlen) + len_field_size(2, e->len));
	apx_pb_put_bytes_field(w, 1, e->name, nlen);
	apx_pb_put_tag(w, 2, PB_LEN);
	apx_pb_put_varint(w, e->len);
	flush(w, s);
	if (!w->err && e->len)
		s->put(s->ctx, e->data, e->len);
}

static void put_profile(pb_writer *w, const ap_profile *p, const pb_sink *s)
{
	for (size_t i = 0; i < p->nsample_types; i++)
		put_value_type(w, F_SAMPLE_TYPE, &p->sample_types[i]);
	flush(w, s);
	for (size_t i = 0; i < p->nsamples; i++) {
		put_sample(w, p, &p->samples[i]);
		flush(w, s);
	}
	for (size_t i = 0; i < p->nmappings; i++) {
		put_mapping(w, &p->mappings[i]);
		flush(w, s);
	}
	for (size_t i = 0; i < p->nlocations; i++) {
		put_location(w, &p->locations[i]);
		flush(w, s);
	}
	for (size_t i = 0; i < p->nfunctions; i++) {
		put_function(w, &p->functions[i]);
		flush(w, s);
	}
	for (size_t i = 0; i < p->nstrings; i++) {
		apx_pb_put_bytes_field(w, F_STRING_TABLE, p->strings[i],
				   strlen(p->strings[i]));
		flush(w, s);
	}
	put_i64(w, F_DROP_FRAMES, p->drop_frames);
	put_i64(w, F_KEEP_FRAMES, p->keep_frames);
	put_i64(w, F_TIME_NANOS, p->time_nanos);
	put_i64(w, F_DURATION_NANOS, p->duration_nanos);
	if (p->period_type.type || p->period_type.unit)
		put_value_type(w, F_PERIOD_TYPE, &p->period_type);
	put_i64(w, F_PERIOD, p->period);
	if (p->ncomments) {
		const int64_t *c = p->comments;
		put_packed_i64(w, F_COMMENT, c, p->ncomments);
	}
	put_i64(w, F_DEFAULT_SAMPLE_TYPE, p->default_sample_type);
	put_i64(w, F_DOC_URL, p->doc_url);
	flush(w, s);
	for (size_t i = 0; i < p->nexts; i++)
		put_ext(w, &p->exts[i], s);
	flush(w, s);
}

static void count_put(void *ctx, const void *b, size_t n)
{
	(void)b;
	*(size_t *)ctx += n;
}

static void gz_put(void *ctx, const void *b, size_t n)
{
	apx_gz_feed(ctx, b, n);
}

/*
 * The gzip'd encoding without the raw one in memory: a first pass counts
 * the bytes (the compressor sizes its window and output from the total),
 * a second feeds them to the compressor field by field. The raw encoding
 * of a large profile is several times its gzip'd size (clang's at the
 * default rate: 614 KB, in a writer grown to 1 MiB, against 97 KB), and
 * the runtime writes profiles inside the program it measures.
 */
static int encode_gzip(const ap_profile *p, const ap_allocator *alloc,
		       unsigned char **out, size_t *len)
{
	pb_writer w;
	size_t total = 0;
	apx_pb_writer_init(&w, alloc);
	put_profile(&w, p, &(pb_sink){ count_put, &total });
	int rc = w.err;
	apx_gz *g = NULL;
	if (!rc)
		rc = apx_gz_begin(&g, total, 6, alloc);
	if (!rc) {
		put_profile(&w, p, &(pb_sink){ gz_put, g });
		int end = apx_gz_end(g, out, len);
		rc = w.err ? w.err : end;
		if (w.err && *out) {
			alloc->free(alloc->ctx, *out, *len + 1);
			*out = NULL;
			*len = 0;
		}
	}
	apx_pb_writer_free(&w);
	return rc;
}

/* Hand the writer's buffer out trimmed to len + 1 bytes, NUL-terminated. */
static int hand_out(pb_writer *w, unsigned char **out, size_t *len)
{
	if (w->cap != w->len + 1) {
		unsigned char *n = w->data
			? w->a->realloc(w->a->ctx, w->data, w->cap, w->len + 1)
			: w->a->alloc(w->a->ctx, 1);
		if (!n)
			return AP_ENOMEM;
		w->data = n;
		w->cap = w->len + 1;
	}
	w->data[w->len] = 0;
	*out = w->data;
	*len = w->len;
	w->data = NULL;
	w->cap = w->len = 0;
	return 0;
}

int ap_pprof_encode(const ap_profile *p, bool gzip, const ap_allocator *alloc,
		    unsigned char **out, size_t *len)
{
	if (!out || !len)
		return AP_EINVAL;
	*out = NULL;
	*len = 0;
	if (!p || ap_profile_validate(p, NULL, 0))
		return AP_EINVAL;
	if (!alloc)
		alloc = ap_profile_allocator(p);
	if (gzip)
		return encode_gzip(p, alloc, out, len);
	pb_writer w;
	apx_pb_writer_init(&w, alloc);
	put_profile(&w, p, NULL);
	int rc = w.err;
	if (!rc)
		rc = hand_out(&w, out, len);
	apx_pb_writer_free(&w);
	return rc;
}
