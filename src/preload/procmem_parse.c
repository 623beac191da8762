/*
 * procmem_parse.c: the pure parsers behind the memory readings (procmem.h)
 * and the crossing rule of the memory triggers (memtrig.h). Kept apart from
 * the readers so that tests and the fuzz target link them without the
 * runtime's state.
 */
#include "procmem.h"

#include <string.h>

#include "memtrig.h"

/* Decimal digits at s (up to end); *out, and the position after them. */
static const char *digits(const char *s, const char *end, uint64_t *out, bool *ok)
{
	uint64_t v = 0;
	const char *p = s;
	while (p < end && *p >= '0' && *p <= '9') {
		uint64_t d = (uint64_t)(*p - '0');
		if (v > (UINT64_MAX - d) / 10) {
			*ok = false;
			return p;
		}
		v = v * 10 + d;
		p++;
	}
	*ok = p > s;
	*out = v;
	return p;
}

bool procmem_kb_field(const char *buf, size_t n, const char *key, uint64_t *bytes)
{
	size_t kn = strlen(key);
	const char *end = buf + n;
	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end;
		if ((size_t)(le - line) > kn && memcmp(line, key, kn) == 0) {
			const char *p = line + kn;
			while (p < le && (*p == ' ' || *p == '\t'))
				p++;
			uint64_t kb;
			bool ok;
			p = digits(p, le, &kb, &ok);
			if (!ok || kb > UINT64_MAX >> 10)
				return false;
			*bytes = kb << 10;
			return true;
		}
		line = le + 1;
	}
	return false;
}

bool procmem_nth_u64(const char *buf, size_t n, unsigned k, uint64_t *out)
{
	const char *p = buf, *end = buf + n;
	const char *nl = memchr(buf, '\n', n);
	if (nl)
		end = nl;
	for (unsigned i = 0;; i++) {
		while (p < end && *p == ' ')
			p++;
		bool ok;
		uint64_t v;
		p = digits(p, end, &v, &ok);
		if (!ok || (p < end && *p != ' '))
			return false;
		if (i == k) {
			*out = v;
			return true;
		}
	}
}

/* Does the comma-separated list (s, n) hold "memory"? */
static bool has_memory(const char *s, size_t n)
{
	size_t i = 0;
	while (i <= n) {
		size_t j = i;
		while (j < n && s[j] != ',')
			j++;
		if (j - i == 6 && memcmp(s + i, "memory", 6) == 0)
			return true;
		i = j + 1;
	}
	return false;
}

bool procmem_cgroup_path(const char *buf, size_t n, bool v2, char *out, size_t cap)
{
	const char *end = buf + n;
	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end;
		const char *c1 = memchr(line, ':', (size_t)(le - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		if (c2) {
			size_t clen = (size_t)(c2 - c1 - 1);
			bool hit = v2 ? (c1 - line == 1 && line[0] == '0' && clen == 0)
				      : has_memory(c1 + 1, clen);
			size_t plen = (size_t)(le - c2 - 1);
			if (hit) {
				const char *path = c2 + 1;
				if (plen == 0 || path[0] != '/' || plen >= cap ||
				    memmem(path, plen, "..", 2) || memchr(path, '\0', plen))
					return false;
				memcpy(out, path, plen);
				out[plen] = '\0';
				return true;
			}
		}
		line = le + 1;
	}
	return false;
}

bool procmem_psi_parse(const char *buf, size_t n, uint32_t *centi)
{
	static const char key[] = "some avg10=";
	size_t kn = sizeof key - 1;
	if (n < kn || memcmp(buf, key, kn) != 0)
		return false;
	const char *p = buf + kn, *end = buf + n;
	uint64_t whole, frac = 0;
	bool ok;
	p = digits(p, end, &whole, &ok);
	if (!ok || whole > 100)
		return false;
	if (p < end && *p == '.') {
		const char *f = p + 1;
		p = digits(f, end, &frac, &ok);
		if (!ok || p - f != 2)
			return false;
	}
	*centi = (uint32_t)(whole * 100 + frac);
	return true;
}

bool memtrig_step(uint64_t v, uint64_t limit, bool *armed)
{
	if (*armed && v >= limit) {
		*armed = false;
		return true;
	}
	/* v < limit * MEMTRIG_REARM_PCT / 100, without overflow */
	if (!*armed && v / MEMTRIG_REARM_PCT < limit / 100)
		*armed = true;
	return false;
}
