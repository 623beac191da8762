/*
 * options.c: the allocation-free "key=value,key=value" parser behind
 * ALLOCPROF_OPTIONS (allocprof/options.h).
 *
 * Everything works on (pointer, length) slices of the caller's string: no
 * copies, no malloc, no locale (strtoul and friends honour the locale and
 * accept signs and spaces we do not want). Messages are formatted into a
 * stack buffer with snprintf using only %s/%.*s conversions, which glibc
 * serves without allocating.
 */
#include "allocprof/options.h"

#include <stdio.h>
#include <string.h>

#define MSG_CAP 512
#define ERR_CAP 96
/* Values longer than this are cut in messages so one line stays readable. */
#define SHOW_CAP 40

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void trim(const char **s, size_t *n)
{
	while (*n > 0 && is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && is_space((*s)[*n - 1]))
		(*n)--;
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive comparison of the slice (s, n) with the C string word. */
static bool slice_ieq(const char *s, size_t n, const char *word)
{
	size_t i = 0;
	for (; i < n && word[i]; i++)
		if (lower(s[i]) != lower(word[i]))
			return false;
	return i == n && word[i] == '\0';
}

/* Leading decimal digits of (s, n) into *out; returns how many were used. */
static size_t scan_digits(const char *s, size_t n, uint64_t *out, bool *overflow)
{
	uint64_t v = 0;
	size_t i = 0;
	*overflow = false;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			*overflow = true;
		else
			v = v * 10 + d;
	}
	*out = v;
	return i;
}

int ap_options_parse_u64(const char *s, size_t n, uint64_t *out)
{
	if (!s || !out || n == 0)
		return AP_EINVAL;
	bool ovf;
	uint64_t v;
	if (scan_digits(s, n, &v, &ovf) != n)
		return AP_EINVAL;
	if (ovf)
		return AP_ERANGE;
	*out = v;
	return 0;
}

int ap_options_parse_size(const char *s, size_t n, uint64_t *out)
{
	if (!s || !out || n == 0)
		return AP_EINVAL;
	bool ovf;
	uint64_t v;
	size_t used = scan_digits(s, n, &v, &ovf);
	if (used == 0)
		return AP_EINVAL;
	if (ovf)
		return AP_ERANGE;
	unsigned shift = 0;
	const char *suf = s + used;
	size_t sn = n - used;
	if (sn > 0) {
		switch (lower(suf[0])) {
		case 'k': shift = 10; break;
		case 'm': shift = 20; break;
		case 'g': shift = 30; break;
		case 't': shift = 40; break;
		case 'b': shift = 0; break;
		default: return AP_EINVAL;
		}
		/* Accept k, kb, kib (and b alone). */
		if (!(sn == 1 || (lower(suf[0]) != 'b' &&
				  (slice_ieq(suf + 1, sn - 1, "b") ||
				   slice_ieq(suf + 1, sn - 1, "ib")))))
			return AP_EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return AP_ERANGE;
	*out = v << shift;
	return 0;
}

int ap_options_parse_bool(const char *s, size_t n, bool *out)
{
	if (!s || !out || n == 0)
		return AP_EINVAL;
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (slice_ieq(s, n, yes[i])) {
			*out = true;
			return 0;
		}
		if (slice_ieq(s, n, no[i])) {
			*out = false;
			return 0;
		}
	}
	return AP_EINVAL;
}

/* a * b into *out; false on overflow. */
static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	if (b != 0 && a > UINT64_MAX / b)
		return false;
	*out = a * b;
	return true;
}

int ap_options_parse_duration_ns(const char *s, size_t n, uint64_t *out)
{
	if (!s || !out || n == 0)
		return AP_EINVAL;
	bool ovf;
	uint64_t whole, frac = 0, frac_scale = 1;
	size_t i = scan_digits(s, n, &whole, &ovf);
	if (ovf)
		return AP_ERANGE;
	size_t int_digits = i;
	size_t frac_digits = 0;
	if (i < n && s[i] == '.') {
		i++;
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, frac_digits++) {
			/* Digits beyond nanosecond precision are dropped. */
			if (frac_scale < 1000000000ULL) {
				frac = frac * 10 + (uint64_t)(s[i] - '0');
				frac_scale *= 10;
			}
		}
	}
	if (int_digits == 0 && frac_digits == 0)
		return AP_EINVAL;
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = { { "ns", 1ULL },
		      { "us", 1000ULL },
		      { "ms", 1000000ULL },
		      { "s", 1000000000ULL },
		      { "m", 60000000000ULL },
		      { "h", 3600000000000ULL } };
	uint64_t mult = 1000000000ULL; /* bare number = seconds */
	if (i < n) {
		mult = 0;
		for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
			if (slice_ieq(s + i, n - i, units[u].suffix))
				mult = units[u].ns;
		if (mult == 0)
			return AP_EINVAL;
	}
	uint64_t a, b;
	if (!mul_ok(whole, mult, &a))
		return AP_ERANGE;
	/* frac / frac_scale * mult, exact because frac < frac_scale <= 1e9
	 * and mult <= 3.6e12 keeps the product below 2^64 only when split. */
	b = (frac * (mult / frac_scale)) +
	    (frac * (mult % frac_scale)) / frac_scale;
	if (a > UINT64_MAX - b)
		return AP_ERANGE;
	*out = a + b;
	return 0;
}

int ap_options_parse_enum(const char *s, size_t n, const char *const *names, int *out)
{
	if (!s || !names || !out || n == 0)
		return AP_EINVAL;
	for (int i = 0; names[i]; i++) {
		if (slice_ieq(s, n, names[i])) {
			*out = i;
			return 0;
		}
	}
	return AP_EINVAL;
}

/* Describe what a spec accepts, for "bad value" messages. */
static void expected(const ap_option_spec *sp, char *buf, size_t cap)
{
	switch (sp->type) {
	case AP_OPT_SIZE:
		snprintf(buf, cap, "a byte size such as 524288 or 512k");
		break;
	case AP_OPT_U64:
		snprintf(buf, cap, "a non-negative integer");
		break;
	case AP_OPT_BOOL:
		snprintf(buf, cap, "1/0, true/false, yes/no or on/off");
		break;
	case AP_OPT_DURATION:
		snprintf(buf, cap, "a duration such as 30, 1.5s, 250ms or 2m");
		break;
	case AP_OPT_ENUM: {
		size_t used = 0;
		int w = snprintf(buf, cap, "one of");
		used = w > 0 ? (size_t)w : 0;
		for (size_t i = 0; sp->enum_names && sp->enum_names[i] && used < cap; i++) {
			w = snprintf(buf + used, cap - used, "%s%s",
				     i ? "|" : " ", sp->enum_names[i]);
			if (w < 0)
				break;
			used += (size_t)w;
		}
		break;
	}
	case AP_OPT_STRING:
		snprintf(buf, cap, "a string of at most %u bytes",
			 (unsigned)(sp->string_cap ? sp->string_cap - 1 : 0));
		break;
	case AP_OPT_CUSTOM:
		snprintf(buf, cap, "a valid value");
		break;
	}
}

static bool in_bounds(const ap_option_spec *sp, uint64_t v)
{
	if (sp->min == 0 && sp->max == 0)
		return true;
	return v >= sp->min && v <= sp->max;
}

/* Apply one value; 0, or negative with err filled when err[0] is set. */
static int apply(const ap_option_spec *sp, const char *v, size_t vn, void *target,
		 char *err, size_t errlen)
{
	unsigned char *dst = (unsigned char *)target + sp->offset;
	uint64_t u = 0;
	int rc;
	switch (sp->type) {
	case AP_OPT_SIZE:
	case AP_OPT_U64:
	case AP_OPT_DURATION:
		rc = sp->type == AP_OPT_SIZE ? ap_options_parse_size(v, vn, &u)
		     : sp->type == AP_OPT_U64 ? ap_options_parse_u64(v, vn, &u)
					       : ap_options_parse_duration_ns(v, vn, &u);
		if (rc == 0 && !in_bounds(sp, u)) {
			snprintf(err, errlen, "must be between %llu and %llu",
				 (unsigned long long)sp->min,
				 (unsigned long long)sp->max);
			return AP_ERANGE;
		}
		if (rc == AP_ERANGE) {
			snprintf(err, errlen, "value too large");
			return rc;
		}
		if (rc == 0)
			memcpy(dst, &u, sizeof u);
		return rc;
	case AP_OPT_BOOL: {
		bool b;
		rc = ap_options_parse_bool(v, vn, &b);
		if (rc == 0)
			memcpy(dst, &b, sizeof b);
		return rc;
	}
	case AP_OPT_ENUM: {
		int e;
		rc = ap_options_parse_enum(v, vn, sp->enum_names, &e);
		if (rc == 0)
			memcpy(dst, &e, sizeof e);
		return rc;
	}
	case AP_OPT_STRING:
		if (sp->string_cap == 0 || vn >= sp->string_cap || vn == 0 ||
		    memchr(v, '\0', vn))
			return AP_EINVAL;
		memcpy(dst, v, vn);
		dst[vn] = '\0';
		return 0;
	case AP_OPT_CUSTOM: {
		char what[ERR_CAP];
		what[0] = '\0';
		if (!sp->parse)
			return AP_EINVAL;
		rc = sp->parse(v, vn, dst, what, sizeof what);
		if (rc != 0 && what[0])
			snprintf(err, errlen, "expected %s", what);
		return rc;
	}
	}
	return AP_EINVAL;
}

static void report(ap_option_error_fn on_error, void *ctx, const char *fmt_kind,
		   const char *k, size_t kn, const char *v, size_t vn,
		   const char *why)
{
	if (!on_error)
		return;
	char msg[MSG_CAP];
	int kshow = (int)(kn > SHOW_CAP ? SHOW_CAP : kn);
	int vshow = (int)(vn > SHOW_CAP ? SHOW_CAP : vn);
	const char *kdots = kn > SHOW_CAP ? "..." : "";
	const char *vdots = vn > SHOW_CAP ? "..." : "";
	if (fmt_kind[0] == 'u')
		snprintf(msg, sizeof msg, "unknown key '%.*s%s' (ignored)",
			 kshow, k, kdots);
	else if (fmt_kind[0] == 'm')
		snprintf(msg, sizeof msg,
			 "missing '=' after key '%.*s%s' (ignored)", kshow, k,
			 kdots);
	else
		snprintf(msg, sizeof msg,
			 "bad value '%.*s%s' for key '%.*s': %s (default kept)",
			 vshow, v, vdots, kshow, k, why);
	on_error(ctx, msg);
}

int ap_options_parse(const char *text, const ap_option_spec *specs,
		     size_t nspecs, void *target, ap_option_error_fn on_error,
		     void *ctx)
{
	if (!text || !target || (!specs && nspecs))
		return 0;
	int problems = 0;
	const char *p = text;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *pair = p;
		p += len + (end ? 1 : 0);
		trim(&pair, &len);
		if (len == 0)
			continue;
		const char *eq = memchr(pair, '=', len);
		const char *k = pair;
		size_t kn = eq ? (size_t)(eq - pair) : len;
		trim(&k, &kn);
		if (!eq) {
			report(on_error, ctx, "m", k, kn, NULL, 0, NULL);
			problems++;
			continue;
		}
		const char *v = eq + 1;
		size_t vn = (size_t)(pair + len - v);
		trim(&v, &vn);
		const ap_option_spec *sp = NULL;
		for (size_t i = 0; i < nspecs; i++) {
			if (strlen(specs[i].name) == kn &&
			    memcmp(specs[i].name, k, kn) == 0) {
				sp = &specs[i];
				break;
			}
		}
		if (!sp) {
			report(on_error, ctx, "u", k, kn, NULL, 0, NULL);
			problems++;
			continue;
		}
		char why[2 * ERR_CAP];
		why[0] = '\0';
		if (apply(sp, v, vn, target, why, sizeof why) != 0) {
			if (!why[0]) {
				char exp[ERR_CAP];
				expected(sp, exp, sizeof exp);
				snprintf(why, sizeof why, "expected %s", exp);
			}
			report(on_error, ctx, "b", k, kn, v, vn, why);
			problems++;
		}
	}
	return problems;
}
