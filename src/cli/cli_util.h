/*
 * cli_util.h: small helpers every subcommand shares: one-line error messages,
 * strict number parsing, whole-file reading. Numbers are parsed strictly: the
 * whole token must be a number in range, or the parse fails.
 */
#ifndef ALLOCPROF_CLI_UTIL_H
#define ALLOCPROF_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "allocprof/fileio.h" /* ap_file_write_atomic */

enum { AP_EXIT_OK = 0, AP_EXIT_USAGE = 1, AP_EXIT_INPUT = 2 };

/* Name used in error messages: "allocprof NAME: ..." (or "allocprof: ..."). */
void ap_cli_set_progname(const char *name);

/* Print "allocprof[ CMD]: <message>\n" to stderr. */
void ap_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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


#endif
