/*
 * log.c: rt_log (log.h). vsnprintf with the plain conversions the runtime
 * uses does not allocate; if libc ever did, the caller's reentrancy guard
 * sends that allocation straight to the real allocator.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void rt_log(const char *fmt, ...)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "allocprof: ");
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof buf - 2)
		len = sizeof buf - 2;
	buf[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, buf, len);
	(void)w;
}
