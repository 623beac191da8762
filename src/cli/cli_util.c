/*
 * cli_util.c: error reporting, strict number parsing, file I/O and the byte
 * formatter of the allocprof command (see cli_util.h).
 */
#define _GNU_SOURCE
#include "cli_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *progname = "allocprof";

void ap_cli_set_progname(const char *name)
{
	progname = name;
}

void ap_cli_error(const char *fmt, ...)
{
	va_list ap;
	if (strcmp(progname, "allocprof"))
		fprintf(stderr, "allocprof %s: ", progname);
	else
		fputs("allocprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void ap_cli_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void ap_cli_format_bytes(double b, ap_bytes_style style, char *buf, size_t n)
{
	static const char *const units[] = {"B",   "KiB", "MiB", "GiB",
					    "TiB", "PiB", "EiB"};
	/* The short style's column stops at PiB (wider numbers then), the
	 * fixed style's at EiB. */
	bool fixed = style == AP_BYTES_FIXED;
	size_t last = fixed ? 6 : 5;
	if (!isfinite(b)) {
		snprintf(buf, n, "%s", !fixed ? "?" : isnan(b) ? "n/a" : "inf");
		return;
	}
	double a = fixed ? fabs(b) : b;
	if (a < (fixed ? 1024 : 10240)) {
		snprintf(buf, n, "%.0f B", b);
		return;
	}
	size_t u = 0;
	while (a >= 1024 && u < last) {
		a /= 1024;
		u++;
	}
	if (fixed)
		snprintf(buf, n, "%s%.2f %s", b < 0 ? "-" : "", a, units[u]);
	else
		snprintf(buf, n, a < 10 ? "%.2f %s" : a < 100 ? "%.1f %s" : "%.0f %s",
			 a, units[u]);
}

int ap_cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int ap_cli_parse_double(const char *s, double *out)
{
	char *end;
	if (!s || !*s || *s == ' ')
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

int ap_cli_parse_level(const char *s, double *out)
{
	double v;
	if (ap_cli_parse_double(s, &v) || !(v > 0.0 && v < 1.0))
		return -1;
	*out = v;
	return 0;
}

long ap_cli_read_proc(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	return (long)n;
}

int ap_read_file(const char *path, unsigned char **out, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0)
		return -1;
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap + 1);
	if (!buf)
		goto fail;
	for (;;) {
		if (n == cap) {
			unsigned char *nb = cap > SIZE_MAX / 4 ? NULL
							       : realloc(buf, cap * 2 + 1);
			if (!nb) {
				errno = ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (fd)
		close(fd);
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
fail:;
	int e = errno;
	free(buf);
	if (fd > 0)
		close(fd);
	errno = e;
	return -1;
}

int ap_cli_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need) {
		if (c > SIZE_MAX / 2 / elem)
			return AP_ENOMEM;
		c *= 2;
	}
	void *n = realloc(*arr, c * elem);
	if (!n)
		return AP_ENOMEM;
	*arr = n;
	*cap = c;
	return 0;
}
