/*
 * protobuf.h: private helpers for the protocol buffers wire format (varints,
 * tags, length-delimited fields, packed and unpacked repeated scalars), used
 * by the pprof encoder and decoder. Only what proto3 messages of int64,
 * uint64, bool, string and sub-message fields need; no zigzag (pprof has no
 * sint fields).
 *
 * Writer: a growable buffer with a sticky error, so encoders write a whole
 * message and check once. Reader: a bounded cursor that never reads past its
 * end and reports failures with the absolute offset in the original buffer.
 */
#ifndef ALLOCPROF_PROTOBUF_H
#define ALLOCPROF_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

enum pb_wire {
	PB_VARINT = 0,
	PB_FIXED64 = 1,
	PB_LEN = 2,
	PB_SGROUP = 3,
	PB_EGROUP = 4,
	PB_FIXED32 = 5
};

/* Largest field number the wire format allows (2^29 - 1). */
#define PB_MAX_FIELD 536870911u

typedef struct pb_writer {
	unsigned char *data;
	size_t len, cap;
	const ap_allocator *a;
	int err; /* 0 or the first AP_E* error; later writes are no-ops */
} pb_writer;

void apx_pb_writer_init(pb_writer *w, const ap_allocator *a);
/* Release the buffer (after an error, or when not handed out). */
void apx_pb_writer_free(pb_writer *w);

/* Bytes of v as a varint (1..10). */
size_t apx_pb_varint_len(uint64_t v);
void apx_pb_put_varint(pb_writer *w, uint64_t v);
void apx_pb_put_tag(pb_writer *w, uint32_t field, enum pb_wire wt);
/* A varint field; skipped when v is 0 (proto3 default). */
void apx_pb_put_uint_field(pb_writer *w, uint32_t field, uint64_t v);
/* A string/bytes field, written even when empty. */
void apx_pb_put_bytes_field(pb_writer *w, uint32_t field, const void *s, size_t n);
/* Packed repeated varints; nothing when n is 0. */
void apx_pb_put_packed(pb_writer *w, uint32_t field, const uint64_t *v, size_t n);

/*
 * Sub-messages: apx_pb_begin_msg writes the tag and returns a mark; the caller
 * writes the body; apx_pb_end_msg inserts the body's length varint.
 */
size_t apx_pb_begin_msg(pb_writer *w, uint32_t field);
void apx_pb_end_msg(pb_writer *w, size_t mark);

typedef struct pb_reader {
	const unsigned char *p;
	size_t len, pos;
	size_t base; /* offset of p[0] in the outermost buffer */
	char *err;   /* reason buffer (may be NULL) */
	size_t errlen;
} pb_reader;

/* Fail with a reason; returns AP_ECORRUPT. */
int apx_pb_fail(pb_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

bool apx_pb_more(const pb_reader *r);
/* Absolute offset of the cursor (for messages). */
size_t apx_pb_offset(const pb_reader *r);
int apx_pb_get_varint(pb_reader *r, uint64_t *v);
/* Reads a tag: field number 1..PB_MAX_FIELD and wire type 0..5. */
int apx_pb_get_tag(pb_reader *r, uint32_t *field, enum pb_wire *wt);
/* A length-delimited payload as a sub-reader over its bytes. */
int apx_pb_get_len(pb_reader *r, pb_reader *sub);
/* Skip a field's value of wire type wt (groups included, nesting bounded). */
int apx_pb_skip(pb_reader *r, uint32_t field, enum pb_wire wt);

/*
 * Call fn(ctx, value) for each element of a repeated varint field whose tag
 * has wire type wt: one value when unpacked (PB_VARINT), all of a packed run
 * (PB_LEN). Any other wire type is corrupt. what names the field in reasons.
 */
int apx_pb_get_repeated(pb_reader *r, enum pb_wire wt, const char *what,
		    int (*fn)(void *ctx, uint64_t v), void *ctx);

/* Open a length-delimited sub-message field (wire type checked). */
int apx_pb_open(pb_reader *r, enum pb_wire wt, const char *what, pb_reader *sub);

/*
 * Walk the fields of message m: fn(ctx, m, field, wire type) must consume
 * the field's value (apx_pb_skip for fields it does not know). Stops at the
 * first non-zero return and passes it on.
 */
typedef int (*pb_field_fn)(void *ctx, pb_reader *m, uint32_t field,
			   enum pb_wire wt);
int apx_pb_fields(pb_reader *m, pb_field_fn fn, void *ctx);

/* Check that a known scalar field has the wire type expected. */
int apx_pb_expect(pb_reader *r, enum pb_wire got, enum pb_wire want,
	      const char *what);

#endif
