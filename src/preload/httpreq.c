/*
 * httpreq.c: the HTTP/1.x request-head parser (httpreq.h).
 *
 * The head is taken one line at a time; a line is only judged once its LF
 * has arrived, so a request trickling in byte by byte is INCOMPLETE until
 * either a line turns out bad or the empty line ends the head. Grammar from
 * RFC 9110 (tokens, field values) and RFC 9112 (request line, line endings,
 * the Host requirement, no obsolete line folding in requests).
 */
#include "httpreq.h"

#include <string.h>

#define DEFAULT_MAX_HEAD 8192

static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field-value bytes: HTAB, SP, VCHAR and obs-text (RFC 9110 5.5). */
static bool is_field_byte(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool ieq(const char *a, size_t n, const char *lit)
{
	size_t k = strlen(lit);
	if (k != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower(a[i]) != lower(lit[i]))
			return false;
	return true;
}

bool httpreq_str_eq(httpreq_str s, const char *lit)
{
	size_t k = strlen(lit);
	return s.n == k && (k == 0 || memcmp(s.p, lit, k) == 0);
}

/*
 * The line starting at pos: content [pos, *end) without its CR LF or LF,
 * the next line at *next. 0, HTTPREQ_INCOMPLETE, or AP_ECORRUPT for a CR
 * that does not end the line.
 */
static int take_line(const char *buf, size_t len, size_t pos, size_t *end,
		     size_t *next)
{
	const char *nl = memchr(buf + pos, '\n', len - pos);
	if (!nl)
		return HTTPREQ_INCOMPLETE;
	size_t e = (size_t)(nl - buf);
	*next = e + 1;
	if (e > pos && buf[e - 1] == '\r')
		e--;
	if (memchr(buf + pos, '\r', e - pos))
		return AP_ECORRUPT; /* a bare CR inside the line */
	*end = e;
	return 0;
}

static httpreq_method method_of(httpreq_str m)
{
	static const struct {
		const char *name;
		httpreq_method m;
	} known[] = { { "GET", HTTPREQ_GET },	    { "HEAD", HTTPREQ_HEAD },
		      { "POST", HTTPREQ_POST },	    { "PUT", HTTPREQ_PUT },
		      { "DELETE", HTTPREQ_DELETE }, { "OPTIONS", HTTPREQ_OPTIONS } };
	/* Methods are case-sensitive (RFC 9110 9.1): "get" is not GET. */
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (httpreq_str_eq(m, known[i].name))
			return known[i].m;
	return HTTPREQ_OTHER;
}

/* Path and query of an origin-form or absolute-form target. */
static int split_target(httpreq *r)
{
	const char *t = r->target.p;
	size_t n = r->target.n, i = 0;
	if (n >= 7 && ieq(t, 7, "http://"))
		i = 7;
	else if (n >= 8 && ieq(t, 8, "https://"))
		i = 8;
	if (i > 0) {
		size_t host = i;
		while (i < n && t[i] != '/' && t[i] != '?')
			i++;
		if (i == host)
			return AP_ECORRUPT; /* absolute-form needs an authority */
		if (i == n || t[i] == '?') {
			/* "http://host" or "http://host?q": the path is "/". */
			r->path.p = "/";
			r->path.n = 1;
			r->query.p = i < n ? t + i + 1 : t + n;
			r->query.n = i < n ? n - i - 1 : 0;
			return 0;
		}
	} else if (n == 0 || t[0] != '/') {
		return AP_ECORRUPT;
	}
	size_t start = i;
	while (i < n && t[i] != '?')
		i++;
	r->path.p = t + start;
	r->path.n = i - start;
	r->query.p = i < n ? t + i + 1 : t + n;
	r->query.n = i < n ? n - i - 1 : 0;
	return 0;
}

static int parse_request_line(const char *s, size_t n, httpreq *r)
{
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	if (i == 0 || i == n || s[i] != ' ')
		return AP_ECORRUPT;
	r->method_name.p = s;
	r->method_name.n = i;
	r->method = method_of(r->method_name);
	size_t t = ++i;
	while (i < n && (unsigned char)s[i] > 0x20 && (unsigned char)s[i] < 0x7f)
		i++;
	if (i == t || i == n || s[i] != ' ')
		return AP_ECORRUPT;
	r->target.p = s + t;
	r->target.n = i - t;
	i++;
	/* HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive. */
	if (n - i != 8 || memcmp(s + i, "HTTP/", 5) != 0 || s[i + 6] != '.' ||
	    s[i + 5] < '0' || s[i + 5] > '9' || s[i + 7] < '0' || s[i + 7] > '9')
		return AP_ECORRUPT;
	if (s[i + 5] != '1' || (s[i + 7] != '0' && s[i + 7] != '1'))
		return AP_EVERSION;
	r->version_minor = s[i + 7] - '0';
	return split_target(r);
}

static int parse_field(const char *s, size_t n, httpreq *r)
{
	if (n > 0 && is_blank(s[0]))
		return AP_ECORRUPT; /* obsolete line folding: refused in requests */
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	if (i == 0 || i == n || s[i] != ':')
		return AP_ECORRUPT; /* includes whitespace before the colon */
	size_t vs = i + 1, ve = n;
	while (vs < ve && is_blank(s[vs]))
		vs++;
	while (ve > vs && is_blank(s[ve - 1]))
		ve--;
	for (size_t k = vs; k < ve; k++)
		if (!is_field_byte((unsigned char)s[k]))
			return AP_ECORRUPT;
	if (r->nheaders == HTTPREQ_MAX_HEADERS)
		return AP_ERANGE;
	httpreq_header *h = &r->headers[r->nheaders++];
	h->name.p = s;
	h->name.n = i;
	h->value.p = s + vs;
	h->value.n = ve - vs;
	return 0;
}

/*
 * RFC 9112 6.3: a Content-Length that is not a list of decimal numbers, or
 * whose fields (or list members) disagree, makes the message's framing
 * unknowable; a server must answer 400. Equal repeats ("5, 5", or the same
 * field twice) are one length. Leading zeros compare by value.
 */
static bool content_length_ok(const httpreq *r)
{
	bool have = false;
	uint64_t len = 0;
	for (size_t i = 0; i < r->nheaders; i++) {
		const httpreq_header *h = &r->headers[i];
		if (!ieq(h->name.p, h->name.n, "content-length"))
			continue;
		const char *s = h->value.p;
		size_t n = h->value.n, j = 0;
		for (;;) {
			while (j < n && is_blank(s[j]))
				j++;
			uint64_t v = 0;
			size_t digits = 0;
			for (; j < n && s[j] >= '0' && s[j] <= '9'; j++, digits++) {
				if (v > (UINT64_MAX - 9) / 10)
					return false;
				v = v * 10 + (uint64_t)(s[j] - '0');
			}
			while (j < n && is_blank(s[j]))
				j++;
			if (digits == 0 || (have && v != len))
				return false;
			have = true;
			len = v;
			if (j == n)
				break;
			if (s[j] != ',')
				return false;
			j++;
		}
	}
	return true;
}

/*
 * Whether the start of an unfinished request line can still become valid:
 * a method token, then a space. Lets a client speaking another protocol
 * (TLS, say) get its 400 at once instead of after the timeout. Empty lines
 * (CR LF) still being skipped are fine.
 */
static bool method_prefix_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ')
			return i > 0;
		if (!is_tchar((unsigned char)s[i]))
			return i == 0 && s[i] == '\r' && n == 1;
	}
	return true;
}

int httpreq_parse(const char *buf, size_t len, size_t max_head, httpreq *out)
{
	if (!buf || !out)
		return AP_EINVAL;
	if (max_head == 0)
		max_head = DEFAULT_MAX_HEAD;
	memset(out, 0, sizeof *out);
	size_t scan = len < max_head ? len : max_head;
	size_t pos = 0, end, next;
	bool have_line = false;
	for (;;) {
		int rc = take_line(buf, scan, pos, &end, &next);
		if (rc == HTTPREQ_INCOMPLETE) {
			if (!have_line && !method_prefix_ok(buf + pos, scan - pos))
				return AP_ECORRUPT; /* not HTTP: say so now */
			return len >= max_head ? AP_ERANGE : HTTPREQ_INCOMPLETE;
		}
		if (rc != 0)
			return rc;
		if (!have_line) {
			/* RFC 9112 2.2: empty lines before the request line are
			 * skipped. */
			if (end > pos) {
				rc = parse_request_line(buf + pos, end - pos, out);
				if (rc != 0)
					return rc;
				have_line = true;
			}
		} else if (end == pos) {
			out->head_len = next;
			break;
		} else {
			rc = parse_field(buf + pos, end - pos, out);
			if (rc != 0)
				return rc;
		}
		pos = next;
	}
	size_t hosts = 0;
	for (size_t i = 0; i < out->nheaders; i++)
		if (ieq(out->headers[i].name.p, out->headers[i].name.n, "host"))
			hosts++;
	if (hosts > 1 || (out->version_minor == 1 && hosts == 0))
		return AP_ECORRUPT;
	if (!content_length_ok(out))
		return AP_ECORRUPT;
	return 0;
}

const httpreq_str *httpreq_header_value(const httpreq *r, const char *name)
{
	if (!r || !name)
		return NULL;
	for (size_t i = 0; i < r->nheaders; i++)
		if (ieq(r->headers[i].name.p, r->headers[i].name.n, name))
			return &r->headers[i].value;
	return NULL;
}

/* ---- Accept ---------------------------------------------------------- */

/* End of the part starting at i: the next `sep` outside a quoted string. */
static size_t part_end(const char *s, size_t n, size_t i, char sep)
{
	bool quoted = false;
	for (; i < n; i++) {
		if (quoted && s[i] == '\\' && i + 1 < n)
			i++;
		else if (s[i] == '"')
			quoted = !quoted;
		else if (!quoted && s[i] == sep)
			break;
	}
	return i;
}

static httpreq_str trimmed(const char *s, size_t a, size_t b)
{
	while (a < b && is_blank(s[a]))
		a++;
	while (b > a && is_blank(s[b - 1]))
		b--;
	httpreq_str r = { s + a, b - a };
	return r;
}

/* A q-value of zero ("0", "0.", "0.000") refuses the media range. */
static bool q_is_zero(httpreq_str v)
{
	if (v.n == 0 || v.p[0] != '0')
		return false;
	for (size_t i = 1; i < v.n; i++)
		if (!(i == 1 && v.p[i] == '.') && v.p[i] != '0')
			return false;
	return true;
}

/* Which of params a "key=value" parameter matches, as a bit mask. */
static uint32_t param_bits(httpreq_str key, httpreq_str val,
			   const char *const *params, size_t np)
{
	if (val.n >= 2 && val.p[0] == '"' && val.p[val.n - 1] == '"') {
		val.p++;
		val.n -= 2;
	}
	uint32_t bits = 0;
	for (size_t k = 0; k < np; k++) {
		const char *eq = strchr(params[k], '=');
		if (!eq)
			continue;
		size_t kn = (size_t)(eq - params[k]);
		bool same_key = key.n == kn;
		for (size_t i = 0; same_key && i < kn; i++)
			same_key = lower(key.p[i]) == lower(params[k][i]);
		if (same_key && httpreq_str_eq(val, eq + 1))
			bits |= 1u << k;
	}
	return bits;
}

static bool element_matches(const char *s, size_t n, const char *type,
			    const char *const *params, size_t np)
{
	size_t e = part_end(s, n, 0, ';');
	httpreq_str mt = trimmed(s, 0, e);
	if (!ieq(mt.p, mt.n, type))
		return false;
	uint32_t want = np == 32 ? UINT32_MAX : (1u << np) - 1, got = 0;
	for (size_t i = e; i < n;) {
		size_t pe = part_end(s, n, i + 1, ';');
		size_t eq = i + 1;
		while (eq < pe && s[eq] != '=')
			eq++;
		if (eq < pe) {
			httpreq_str key = trimmed(s, i + 1, eq);
			httpreq_str val = trimmed(s, eq + 1, pe);
			if (ieq(key.p, key.n, "q") && q_is_zero(val))
				return false;
			got |= param_bits(key, val, params, np);
		}
		i = pe;
	}
	return (got & want) == want;
}

bool httpreq_accepts(const char *value, size_t n, const char *type,
		     const char *const *params, size_t nparams)
{
	if (!value || !type || nparams > 32 || (nparams && !params))
		return false;
	for (size_t i = 0; i < n;) {
		size_t e = part_end(value, n, i, ',');
		if (element_matches(value + i, e - i, type, params, nparams))
			return true;
		i = e + 1;
	}
	return false;
}
