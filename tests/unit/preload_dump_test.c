/*
 * preload_dump_test.c: writing profile files (src/preload/dump.h): atomic
 * replacement with mode 0600, no temporary left behind on failure, a clear
 * error for an unwritable path, a written pprof file that decodes back
 * to the values that went in, and an encoding that never holds the
 * profile and zlib's state at once.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocprof/codec.h"
#include "allocprof/profile.h"
#include "aptest.h"
#include "config.h"
#include "dump.h"
#include "fmt_testutil.h"

static char dir[64];

static const char *tmpdir(void)
{
	snprintf(dir, sizeof dir, "/tmp/ap_dump_test.XXXXXX");
	return mkdtemp(dir);
}

static int count_entries(const char *d)
{
	DIR *h = opendir(d);
	int n = 0;
	if (!h)
		return -1;
	for (struct dirent *e; (e = readdir(h));)
		n += e->d_name[0] != '.';
	closedir(h);
	return n;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	unsigned char *buf = malloc(1 << 20);
	*len = buf ? fread(buf, 1, 1 << 20, f) : 0;
	fclose(f);
	return buf;
}

AP_TEST(files_are_replaced_atomically_with_mode_0600)
{
	const char *d = tmpdir();
	AP_CHECK(d != NULL);
	char path[128];
	snprintf(path, sizeof path, "%s/p.pb.gz", d);
	AP_CHECK_EQ_INT(dump_write_atomic(path, "first", 5), 0);
	AP_CHECK_EQ_INT(dump_write_atomic(path, "second!", 7), 0);
	struct stat st;
	AP_CHECK_EQ_INT(stat(path, &st), 0);
	AP_CHECK_EQ_INT(st.st_mode & 0777, 0600);
	AP_CHECK_EQ_INT(st.st_size, 7);
	AP_CHECK_EQ_INT(count_entries(d), 1); /* no temporary left */
	unlink(path);
	rmdir(d);
}

AP_TEST(an_unwritable_path_is_an_io_error_not_a_crash)
{
	int saved = dup(2); /* keep the expected message out of the log */
	FILE *null = fopen("/dev/null", "w");
	if (null)
		dup2(fileno(null), 2);
	int rc = dump_write_atomic("/nonexistent-dir/x/p.pb.gz", "x", 1);
	int e = errno;
	dup2(saved, 2);
	close(saved);
	if (null)
		fclose(null);
	AP_CHECK_EQ_INT(rc, AP_EIO);
	AP_CHECK_EQ_INT(e, ENOENT);
}

/* An empty table in a fresh arena, and a sample description for exact
 * records (probability 1, weight 1; the caller sets the size). */
static int exact_table(arena *a, stack_table *t, ap_sample_info *in)
{
	arena_init(a);
	memset(in, 0, sizeof *in);
	in->count = 1;
	in->prob = 1;
	in->weight = 1;
	return table_init(t, a);
}

AP_TEST(a_written_profile_decodes_to_the_recorded_values)
{
	const char *d = tmpdir();
	AP_CHECK(d != NULL);
	arena a;
	stack_table t;
	ap_sample_info in;
	AP_CHECK_EQ_INT(exact_table(&a, &t, &in), 0);
	static const uintptr_t pcs[] = { 0x401000, 0x402000 };
	in.size = 48;
	sample_rec r;
	for (int i = 0; i < 5; i++)
		AP_CHECK_EQ_INT(table_record_alloc(&t, pcs, 2, 1, &in, 48, &r, NULL), 0);
	char path[128];
	snprintf(path, sizeof path, "%s/exact.pb.gz", d);
	dump_input din = { .table = &t, .a = &a, .period = 1,
			   .format = RT_FORMAT_PPROF, .with_mappings = true };
	AP_CHECK_EQ_INT(dump_write_file(&din, path), 0);
	size_t len = 0;
	unsigned char *buf = slurp(path, &len);
	AP_CHECK(buf != NULL && len > 2 && buf[0] == 0x1f && buf[1] == 0x8b);
	ap_profile *p = NULL;
	char err[200] = "";
	AP_CHECK_MSG(ap_pprof_decode(buf, len, NULL, &p, err, sizeof err) == 0, "%s", err);
	AP_CHECK_EQ_U64(p->nsamples, 1);
	int space = ap_profile_find_sample_type(p, "inuse_space");
	int objs = ap_profile_find_sample_type(p, "alloc_objects");
	AP_CHECK(space >= 0 && objs >= 0);
	AP_CHECK_EQ_INT(p->samples[0].values[space], 5 * 48);
	AP_CHECK_EQ_INT(p->samples[0].values[objs], 5);
	AP_CHECK(p->nmappings >= 1);
	ap_profile_destroy(p);
	free(buf);
	unlink(path);
	rmdir(d);
}

/*
 * The runtime builds each dump in a scratch arena (dumper.c, and the HTTP
 * endpoint likewise) and destroys it afterwards; nothing may be taken from
 * the table's arena for good. The sites' copy used to come from the
 * table's arena and be freed into the scratch one: every interval dump of
 * a long-running service leaked it (about 100 bytes a site).
 */
AP_TEST(dumps_built_in_a_scratch_arena_leave_the_tables_arena_as_it_was)
{
	const char *d = tmpdir();
	AP_CHECK(d != NULL);
	arena a;
	stack_table t;
	ap_sample_info in;
	AP_CHECK_EQ_INT(exact_table(&a, &t, &in), 0);
	sample_rec r;
	for (uintptr_t k = 0; k < 50; k++) {
		const uintptr_t pcs[] = { 0x401000 + 16 * k, 0x402000 };
		in.size = 16 + k;
		AP_CHECK_EQ_INT(table_record_alloc(&t, pcs, 2, 1, &in, 32 + k, &r, NULL), 0);
	}
	char path[128];
	snprintf(path, sizeof path, "%s/scratch.pb.gz", d);
	size_t base = 0;
	for (int i = 0; i < 10; i++) {
		arena scratch;
		arena_init(&scratch);
		dump_input din = { .table = &t, .a = &scratch, .period = 1,
				   .format = RT_FORMAT_PPROF, .with_mappings = true };
		AP_CHECK_EQ_INT(dump_write_file(&din, path), 0);
		arena_destroy(&scratch);
		if (i == 0)
			base = a.in_use; /* after whatever a first dump sets up */
	}
	AP_CHECK_EQ_U64(a.in_use, base);
	unlink(path);
	rmdir(d);
}

/*
 * The dump at exit may land on the program's peak, so dump_encode_gzip
 * encodes, frees the profile, and only then allocates zlib's state: its
 * peak is that of encoding alone (the profile plus the growing encoded
 * buffer), never that plus the compressor (about 166 KiB here). The
 * profile, 3000 samples of 12 frames, is far larger than the compressor
 * and its output, so compressing after the free stays under the encoding's
 * peak; compressing with the profile alive would go past it.
 */
AP_TEST(encoding_frees_the_profile_before_compressing)
{
	struct peak_alloc c;
	ap_allocator al = pa_make(&c);
	ap_profile *p = NULL;
	AP_CHECK_EQ_INT(ap_profile_create(&al, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, 524288), 0);
	enum { NLOC = 4000, NSAMP = 3000, DEPTH = 12 };
	static uint64_t ids[NLOC];
	for (int i = 0; i < NLOC; i++) {
		ap_location loc;
		memset(&loc, 0, sizeof loc);
		loc.address = 0x400000 + 16 * (uint64_t)i;
		AP_CHECK_EQ_INT(ap_profile_add_location(p, &loc, &ids[i]), 0);
	}
	int64_t vals[64];
	AP_CHECK(p->nsample_types <= 64);
	for (int i = 0; i < NSAMP; i++) {
		uint64_t locs[DEPTH];
		for (int k = 0; k < DEPTH; k++)
			locs[k] = ids[(i * 7 + k * 331) % NLOC];
		for (size_t v = 0; v < p->nsample_types; v++)
			vals[v] = (int64_t)(i + 1) * 48;
		AP_CHECK_EQ_INT(ap_profile_add_sample(p, locs, DEPTH, vals, NULL, 0), 0);
	}
	/* Reference: encoding alone, the profile alive. */
	unsigned char *raw = NULL;
	size_t raw_len = 0;
	c.peak = c.live;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, false, &al, &raw, &raw_len), 0);
	size_t encode_peak = c.peak;
	al.free(al.ctx, raw, raw_len + 1);
	AP_CHECK(c.live > 4 * (size_t)(200 << 10)); /* the profile dwarfs zlib */

	unsigned char *gz = NULL;
	size_t gz_len = 0;
	c.peak = c.live;
	AP_CHECK_EQ_INT(dump_encode_gzip(p, &al, &gz, &gz_len), 0);
	AP_CHECK_MSG(c.peak <= encode_peak, "peak %zu > encoding's %zu", c.peak,
		     encode_peak);
	AP_CHECK_EQ_U64(c.live, gz_len + 1); /* only the output is left */
	unsigned char *back = NULL;
	size_t blen = 0;
	AP_CHECK_EQ_INT(ap_gzip_decompress(gz, gz_len, 0, NULL, &back, &blen,
					   NULL, 0), 0);
	AP_CHECK_EQ_U64(blen, raw_len);
	ap_profile *q = NULL;
	char err[200] = "";
	AP_CHECK_MSG(ap_pprof_decode(gz, gz_len, NULL, &q, err, sizeof err) == 0,
		     "%s", err);
	AP_CHECK_EQ_U64(q->nsamples, NSAMP);
	ap_profile_destroy(q);
	free(back);
	al.free(al.ctx, gz, gz_len + 1);
}
