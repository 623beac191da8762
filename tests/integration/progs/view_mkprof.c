/*
 * view_mkprof.c: writes a small allocprof heap profile (plain, not gzip'd,
 * pprof protobuf) from a text description, for the diff/flame/folded
 * integration tests. Its protobuf writer is independent of liballocprof's
 * encoder on purpose: the CLI's decoder is then checked against a second
 * implementation of the format (docs/FORMATS.md, google/pprof profile.proto).
 *
 * Usage: view_mkprof [--go] RATE OUT.pb < description
 * Each description line is
 *     SIZE ALLOC_SAMPLES INUSE_SAMPLES root;caller;...;leaf
 * meaning ALLOC_SAMPLES sampled allocations of SIZE bytes at that stack, of
 * which INUSE_SAMPLES are still live. Values are computed as the runtime
 * would (Horvitz-Thompson with pi = 1 - (1-1/RATE)^SIZE; u with the
 * sampled byte at its expected offset). In frame names \xHH
 * stands for a byte (so tests can use ';', controls, invalid UTF-8).
 * Lines starting with '#' are ignored. "@time NS" sets the profile's
 * time_nanos and "@comment TEXT" adds a comment (e.g. a process identity,
 * "allocprof.process=pid=P;start=NS;boot=ID;seq=N"), so tests can build
 * series of dumps. --go writes only Go's four sample
 * types (alloc/inuse objects and space), as Go's own heap profiles do, so
 * readers must derive sample counts themselves. On stdout it prints the expected
 * totals "alloc_bytes=N inuse_bytes=N" (rounded as written).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	unsigned char *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p) {
			perror("view_mkprof");
			exit(2);
		}
		b->cap = cap;
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
}

static void varint(struct buf *b, uint64_t v)
{
	unsigned char c;
	do {
		c = v & 0x7f;
		v >>= 7;
		if (v)
			c |= 0x80;
		put(b, &c, 1);
	} while (v);
}

static void field_varint(struct buf *b, unsigned field, uint64_t v)
{
	varint(b, (uint64_t)field << 3);
	varint(b, v);
}

static void field_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
	varint(b, (uint64_t)field << 3 | 2);
	varint(b, n);
	put(b, p, n);
}

/* Append a finished sub-message and reset it. */
static void field_msg(struct buf *b, unsigned field, struct buf *m)
{
	field_bytes(b, field, m->p, m->n);
	m->n = 0;
}

static char **strs;
static size_t nstrs;

static uint64_t str_index(const char *s)
{
	for (size_t i = 0; i < nstrs; i++)
		if (!strcmp(strs[i], s))
			return i;
	strs = realloc(strs, (nstrs + 1) * sizeof *strs);
	if (!strs || !(strs[nstrs] = strdup(s))) {
		perror("view_mkprof");
		exit(2);
	}
	return nstrs++;
}

/* Functions (and their one-line locations) by name: id = index + 1. */
static char **funcs;
static size_t nfuncs;

static uint64_t func_id(const char *name)
{
	for (size_t i = 0; i < nfuncs; i++)
		if (!strcmp(funcs[i], name))
			return i + 1;
	funcs = realloc(funcs, (nfuncs + 1) * sizeof *funcs);
	if (!funcs || !(funcs[nfuncs] = strdup(name))) {
		perror("view_mkprof");
		exit(2);
	}
	return ++nfuncs;
}

/* Decode \xHH escapes in place. */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r;) {
		unsigned v;
		if (r[0] == '\\' && r[1] == 'x' && sscanf(r + 2, "%2x", &v) == 1 &&
		    r[2] && r[3]) {
			*w++ = (char)v;
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
}

enum { NTYPES = 14 };
static const char *const types[NTYPES][2] = {
	{"alloc_objects", "count"}, {"alloc_space", "bytes"},
	{"inuse_objects", "count"}, {"inuse_space", "bytes"},
	{"alloc_samples", "count"}, {"alloc_u", "bytes"},
	{"alloc_space_var", "bytes"}, {"alloc_objects_var", "count"},
	{"inuse_samples", "count"}, {"inuse_u", "bytes"},
	{"inuse_space_var", "bytes"}, {"inuse_objects_var", "count"},
	{"alloc_usable_space", "bytes"}, {"inuse_usable_space", "bytes"}};

/* (1 - 1/rate)^z by repeated squaring: helper programs link no libm. */
static double q_pow(double rate, uint64_t z)
{
	double q = 1.0 - 1.0 / rate, r = 1.0;
	for (; z; z >>= 1, q *= q)
		if (z & 1)
			r *= q;
	return r;
}

static int64_t round_pos(double x)
{
	return (int64_t)(x + 0.5);
}

/* The 6 per-view values of k samples of size z: objects, bytes, samples,
 * u, var_bytes, var_objects (rounded as the runtime writes them). */
static void view_values(uint64_t z, double k, double rate, int64_t out[6])
{
	double pi = rate <= 1 ? 1.0 : 1.0 - q_pow(rate, z);
	double zd = (double)z;
	out[0] = round_pos(k / pi);
	out[1] = round_pos(k * zd / pi);
	out[2] = (int64_t)k;
	/* u = size - offset, offset at its mean given the allocation was
	 * sampled: a geometric(1/rate) truncated to [0, z). */
	double qz = 1.0 - pi, off = 0;
	if (rate > 1 && pi > 0)
		off = (rate - 1) - zd * qz / pi;
	if (off < 0)
		off = 0;
	if (off > zd - 1)
		off = zd - 1;
	out[3] = round_pos(k * (zd - off));
	out[4] = round_pos(k * (1 - pi) * zd * zd / (pi * pi));
	out[5] = round_pos(k * (1 - pi) / (pi * pi));
}

int main(int argc, char **argv)
{
	int ntypes = NTYPES;
	if (argc == 4 && !strcmp(argv[1], "--go")) {
		ntypes = 4;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: view_mkprof [--go] RATE OUT.pb < description\n");
		return 1;
	}
	double rate = strtod(argv[1], NULL);
	if (!(rate >= 1)) {
		fprintf(stderr, "view_mkprof: bad rate '%s'\n", argv[1]);
		return 1;
	}
	struct buf prof = {0}, m = {0}, sub = {0}, packed = {0}, comments = {0};
	str_index("");
	for (int t = 0; t < ntypes; t++) {
		field_varint(&sub, 1, str_index(types[t][0]));
		field_varint(&sub, 2, str_index(types[t][1]));
		field_msg(&prof, 1, &sub);
	}
	uint64_t k_bytes = str_index("bytes");
	int64_t alloc_total = 0, inuse_total = 0;
	unsigned long long time_ns = 0;
	char line[8192];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		if (!strncmp(line, "@time ", 6)) {
			time_ns = strtoull(line + 6, NULL, 10);
			continue;
		}
		if (!strncmp(line, "@comment ", 9)) {
			field_varint(&comments, 13, str_index(line + 9));
			continue;
		}
		unsigned long long size, ka, ki;
		int off = 0;
		if (sscanf(line, "%llu %llu %llu %n", &size, &ka, &ki, &off) != 3 ||
		    !off || ki > ka) {
			fprintf(stderr, "view_mkprof: bad line '%s'\n", line);
			return 1;
		}
		/* Frames root first in the text, leaf first in the profile. */
		char *frames[256];
		size_t nf = 0;
		for (char *tok = strtok(line + off, ";"); tok && nf < 256;
		     tok = strtok(NULL, ";"))
			frames[nf++] = tok;
		for (size_t i = nf; i-- > 0;) {
			unescape(frames[i]);
			varint(&packed, func_id(frames[i]));
		}
		field_msg(&m, 1, &packed);
		int64_t v[NTYPES] = {0}, a[6], in[6];
		view_values(size, (double)ka, rate, a);
		view_values(size, (double)ki, rate, in);
		v[0] = a[0], v[1] = a[1], v[2] = in[0], v[3] = in[1];
		v[4] = a[2], v[5] = a[3], v[6] = a[4], v[7] = a[5];
		v[8] = in[2], v[9] = in[3], v[10] = in[4], v[11] = in[5];
		v[12] = a[1], v[13] = in[1];
		alloc_total += a[1];
		inuse_total += in[1];
		for (int t = 0; t < ntypes; t++)
			varint(&packed, (uint64_t)v[t]);
		field_msg(&m, 2, &packed);
		field_varint(&sub, 1, k_bytes);
		field_varint(&sub, 3, size);
		field_msg(&m, 3, &sub);
		field_msg(&prof, 2, &m);
	}
	/* One mapping, already symbolized, so no binary is looked for. */
	field_varint(&m, 1, 1);
	field_varint(&m, 2, 0x400000);
	field_varint(&m, 3, 0x800000);
	field_varint(&m, 5, str_index("/fixture/view_prog"));
	for (unsigned f = 7; f <= 9; f++)
		field_varint(&m, f, 1);
	field_msg(&prof, 3, &m);
	for (size_t i = 0; i < nfuncs; i++) {
		field_varint(&m, 1, i + 1);
		field_varint(&m, 2, 1);
		field_varint(&m, 3, 0x400000 + 16 * (i + 1));
		field_varint(&sub, 1, i + 1);
		field_varint(&sub, 2, 10 + i);
		field_msg(&m, 4, &sub);
		field_msg(&prof, 4, &m);
	}
	for (size_t i = 0; i < nfuncs; i++) {
		field_varint(&m, 1, i + 1);
		field_varint(&m, 2, str_index(funcs[i]));
		field_varint(&m, 3, str_index(funcs[i]));
		field_varint(&m, 4, str_index("view_prog.c"));
		field_msg(&prof, 5, &m);
	}
	field_varint(&sub, 1, str_index("space"));
	field_varint(&sub, 2, str_index("bytes"));
	field_msg(&prof, 11, &sub);
	field_varint(&prof, 12, (uint64_t)rate);
	if (time_ns)
		field_varint(&prof, 9, time_ns);
	if (comments.n)
		put(&prof, comments.p, comments.n);
	for (size_t i = 0; i < nstrs; i++)
		field_bytes(&prof, 6, strs[i], strlen(strs[i]));
	FILE *f = fopen(argv[2], "wb");
	if (!f || fwrite(prof.p, 1, prof.n, f) != prof.n || fclose(f)) {
		fprintf(stderr, "view_mkprof: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	printf("alloc_bytes=%lld inuse_bytes=%lld\n", (long long)alloc_total,
	       (long long)inuse_total);
	/* Freed so the sanitizer builds' leak checker stays quiet. */
	free(prof.p);
	free(m.p);
	free(sub.p);
	free(packed.p);
	free(comments.p);
	for (size_t i = 0; i < nstrs; i++)
		free(strs[i]);
	free(strs);
	for (size_t i = 0; i < nfuncs; i++)
		free(funcs[i]);
	free(funcs);
	return 0;
}
