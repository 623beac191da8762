/*
 * preload_dump_test.c: writing profile files (src/preload/dump.h): atomic
 * replacement with mode 0600, no temporary left behind on failure, a clear
 * error for an unwritable path, and a written pprof file that decodes back
 * to the values that went in.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocprof/profile.h"
#include "aptest.h"
#include "config.h"
#include "dump.h"

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

AP_TEST(a_written_profile_decodes_to_the_recorded_values)
{
	const char *d = tmpdir();
	AP_CHECK(d != NULL);
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	static const uintptr_t pcs[] = { 0x401000, 0x402000 };
	ap_sample_info in;
	memset(&in, 0, sizeof in);
	in.size = 48;
	in.count = 1;
	in.prob = 1;
	in.weight = 1;
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
