/*
 * sample_table_rt.c: sample_table=FILE in the runtime. The file is mapped,
 * parsed by the library (no allocation, so it runs before the runtime's
 * arena exists) and unmapped; no descriptor stays open. The table then
 * only changes the slow path: the fast path still counts bytes at the
 * base rate, and ap_sampler_sample_at thins its successes to each class's
 * rate, so the malloc fast path is the same instructions with or without
 * a table.
 */
#include "sample_table_rt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocprof/sample_table.h"
#include "log.h"
#include "runtime_core.h"

/* Larger files are refused: a table of AP_SAMPLE_TABLE_MAX classes with a
 * comment per class is well under 200 KiB. */
#define TABLE_FILE_MAX (1u << 20)

static ap_sample_table table;

/* Map path and parse it into table; 0 or -1 with err filled. */
static int load(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > TABLE_FILE_MAX) {
		close(fd);
		snprintf(err, errlen, "not a regular file of at most 1 MiB");
		return -1;
	}
	if (st.st_size == 0) {
		close(fd);
		snprintf(err, errlen, "empty file");
		return -1;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		snprintf(err, errlen, "cannot map: %s", strerror(errno));
		return -1;
	}
	int rc = ap_sample_table_parse(m, (size_t)st.st_size, &table, err, errlen);
	munmap(m, (size_t)st.st_size);
	return rc ? -1 : 0;
}

void rt_table_load(rt_options *o)
{
	char err[224];
	if (!o->sample_table[0])
		return;
	int e = errno;
	if (load(o->sample_table, err, sizeof err) != 0) {
		rt_log("sample_table=%s: %s; sampling every size at rate=%llu",
		       o->sample_table, err, (unsigned long long)o->rate);
		errno = e;
		return;
	}
	errno = e;
	o->rate = table.base;
	rt.hot.table_on = true;
	if (o->verbose)
		rt_log("sample_table=%s: base rate %llu, %zu classes",
		       o->sample_table, (unsigned long long)table.base, table.n);
}

void rt_table_sample(ap_sampler *s, size_t n, ap_sample_info *info)
{
	if (rt.hot.table_on)
		ap_sampler_sample_at(s, n, ap_sample_table_rate(&table, n), info);
	else
		ap_sampler_sample(s, n, info);
}
