/*
 * cli_util.h: the bottom layer of the allocprof command: one-line error
 * messages, strict number parsing, whole-file reading and the one byte
 * formatter every output uses. Numbers are parsed strictly: the
 * whole token must be a number in range, or the parse fails.
 */
#ifndef ALLOCPROF_CLI_UTIL_H
#define ALLOCPROF_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "allocprof/fileio.h" /* ap_file_write_atomic */

enum { AP_EXIT_OK = 0, AP_EXIT_USAGE = 1, AP_EXIT_INPUT = 2 };

/* Name used in error messages: "allocprof NAME: ..." (or "allocprof: ..."). */
void ap_cli_set_progname(const char *name);

/* Print "allocprof[ CMD]: <message>\n" to stderr. */
void ap_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* snprintf into err (when err and errlen are nonzero): how engines hand a
 * one-line reason back to the command that prints it. */
void ap_cli_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Strict parsers: 0 on success, -1 on a malformed or out-of-range token. */
int ap_cli_parse_u64(const char *s, uint64_t *out);
int ap_cli_parse_double(const char *s, double *out);
/* A confidence level strictly between 0 and 1. */
int ap_cli_parse_level(const char *s, double *out);

/*
 * Read a whole file ("-" = stdin) into a malloc'd buffer. 0 on success; on
 * failure -1 with errno set. *out is NUL-terminated (not counted in *len).
 */
int ap_read_file(const char *path, unsigned char **out, size_t *len);

/* The first cap - 1 bytes of /proc/PID/NAME, NUL-terminated; their
 * number, or -1 when it cannot be opened. */
long ap_cli_read_proc(pid_t pid, const char *name, char *buf, size_t cap);

/*
 * Make room for need elements of elem bytes in the malloc'd array *arr of
 * capacity *cap (doubling, from 16): 0, or AP_ENOMEM (the array unchanged)
 * when out of memory or the size would overflow.
 */
int ap_cli_grow(void **arr, size_t *cap, size_t need, size_t elem);

/*
 * Bytes for people, in binary units (B, KiB, MiB, ...), in one of two
 * styles:
 *   AP_BYTES_FIXED  exact bytes below 1 KiB, then two decimals ("1.50 KiB",
 *                   "-3.00 MiB"); "n/a" for NaN, "inf" for infinities.
 *                   Flame graph tooltips, diff tables.
 *   AP_BYTES_SHORT  exact bytes below 10 KiB, then three significant digits
 *                   ("12.3 MiB", "456 KiB"); "?" when not finite. Report
 *                   tables, where columns must stay narrow.
 */
typedef enum ap_bytes_style { AP_BYTES_FIXED = 0, AP_BYTES_SHORT = 1 } ap_bytes_style;
void ap_cli_format_bytes(double bytes, ap_bytes_style style, char *buf, size_t n);

#endif
