/*
 * allocprof/options.h: an allocation-free parser for "key=value,key=value"
 * option strings (the MALLOC_CONF style used by ALLOCPROF_OPTIONS).
 *
 * The parser never allocates and never calls malloc, so the preload runtime
 * can run it before its own arena exists. It is table driven: a caller
 * describes each key once (ap_option_spec: name, value type, where the value
 * goes) and ap_options_parse() fills a caller-owned struct. New keys are one
 * more table row; a key whose value needs special checking (an address, a
 * signal) uses AP_OPT_CUSTOM with its own parse function.
 *
 * Syntax: pairs separated by ','; each pair is key '=' value; spaces and tabs
 * around keys and values are ignored; empty pairs (",,") are skipped; a value
 * cannot contain ','. When a key repeats, the last good value wins.
 *
 * Errors never stop parsing: each bad pair is reported through the error
 * callback as one line naming the key ("unknown key 'rat' (ignored)") and the
 * destination keeps its previous (default) value.
 */
#ifndef ALLOCPROF_OPTIONS_H
#define ALLOCPROF_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Value types a spec can have. */
typedef enum ap_option_type {
	AP_OPT_SIZE,     /* uint64_t bytes; suffix k/m/g/t (powers of 1024) */
	AP_OPT_U64,      /* uint64_t, plain decimal */
	AP_OPT_BOOL,     /* bool; 1/0, true/false, yes/no, on/off */
	AP_OPT_DURATION, /* uint64_t nanoseconds; bare number = seconds;
			    suffix ns, us, ms, s, m, h; one decimal point */
	AP_OPT_ENUM,     /* int: index into enum_names */
	AP_OPT_STRING,   /* char[string_cap], NUL-terminated copy */
	AP_OPT_CUSTOM    /* parse(value, len, dst, err, errlen) decides */
} ap_option_type;

/*
 * A custom value parser: store the value at dst and return 0, or return a
 * negative AP_E* code and write a short description of what was expected
 * into err ("a signal name or number").
 */
typedef int (*ap_option_parse_fn)(const char *value, size_t len, void *dst,
				  char *err, size_t errlen);

typedef struct ap_option_spec {
	const char *name;
	ap_option_type type;
	size_t offset;      /* offsetof(target struct, field) */
	uint64_t min, max;  /* inclusive bounds for SIZE/U64/DURATION; 0,0 = none */
	const char *const *enum_names; /* ENUM: NULL-terminated list */
	size_t string_cap;  /* STRING: size of the char array, NUL included */
	ap_option_parse_fn parse; /* CUSTOM */
	const char *help;   /* one line for documentation and --help output */
} ap_option_spec;

/* Receives one complete message per problem, without a trailing newline. */
typedef void (*ap_option_error_fn)(void *ctx, const char *msg);

/*
 * Parse text (NULL or "" = nothing to do) against nspecs specs, storing into
 * the struct at target. Each problem is passed to on_error (may be NULL).
 * Returns the number of problems (0 = all pairs accepted).
 */
AP_API int ap_options_parse(const char *text, const ap_option_spec *specs,
			    size_t nspecs, void *target,
			    ap_option_error_fn on_error, void *ctx);

/*
 * Typed value parsers, usable on their own. Each takes (s, n), a value that
 * need not be NUL-terminated, rejects empty input, trailing garbage and
 * overflow, and returns 0, AP_EINVAL (malformed) or AP_ERANGE (too large).
 */
AP_API int ap_options_parse_u64(const char *s, size_t n, uint64_t *out);
AP_API int ap_options_parse_size(const char *s, size_t n, uint64_t *out);
AP_API int ap_options_parse_bool(const char *s, size_t n, bool *out);
AP_API int ap_options_parse_duration_ns(const char *s, size_t n, uint64_t *out);
/* *out = index of the name equal to (s, n) in the NULL-terminated names. */
AP_API int ap_options_parse_enum(const char *s, size_t n, const char *const *names,
			 int *out);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_OPTIONS_H */
