/*
 * memory.c: the process-memory record's text form (allocprof/memory.h).
 * No allocation, no stdio: the runtime encodes records from its dumper
 * thread with a buffer on the stack.
 */
#include "allocprof/memory.h"

#include <string.h>

static const char *const key_names[AP_MEM_NKEYS] = {
	[AP_MEM_RSS] = "rss_bytes",
	[AP_MEM_ANON] = "anon_bytes",
	[AP_MEM_FILE] = "file_bytes",
	[AP_MEM_SHMEM] = "shmem_bytes",
	[AP_MEM_SHARED] = "shared_bytes",
	[AP_MEM_SWAP] = "swap_bytes",
	[AP_MEM_CGROUP_USAGE] = "cgroup_usage_bytes",
	[AP_MEM_CGROUP_LIMIT] = "cgroup_limit_bytes",
	[AP_MEM_ALLOC_ALLOCATED] = "allocator_allocated_bytes",
	[AP_MEM_ALLOC_ACTIVE] = "allocator_active_bytes",
	[AP_MEM_ALLOC_MAPPED] = "allocator_mapped_bytes",
	[AP_MEM_ALLOC_RESIDENT] = "allocator_resident_bytes",
	[AP_MEM_ALLOC_RETAINED] = "allocator_retained_bytes",
	[AP_MEM_ALLOC_METADATA] = "allocator_metadata_bytes",
	[AP_MEM_ALLOC_FREE] = "allocator_free_bytes",
	[AP_MEM_RUNTIME_RANGE] = "runtime_range_bytes",
	[AP_MEM_RUNTIME_CACHED] = "runtime_cached_bytes",
	[AP_MEM_RUNTIME_ARENA] = "runtime_arena_bytes",
	[AP_MEM_RUNTIME_OTHER] = "runtime_other_bytes",
	[AP_MEM_TIME_NS] = "time_ns",
};

_Static_assert(AP_MEM_NKEYS <= 32, "have is a 32-bit mask");

const char *ap_memory_key_name(ap_memory_key k)
{
	return (unsigned)k < AP_MEM_NKEYS ? key_names[k] : NULL;
}

void ap_memory_set(ap_memory *m, ap_memory_key k, uint64_t v)
{
	if ((unsigned)k >= AP_MEM_NKEYS)
		return;
	m->v[k] = v;
	m->have |= 1u << k;
}

bool ap_memory_get(const ap_memory *m, ap_memory_key k, uint64_t *out)
{
	if ((unsigned)k >= AP_MEM_NKEYS || !(m->have & (1u << k)))
		return false;
	*out = m->v[k];
	return true;
}

static bool word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static bool word_ok(const char *s, size_t n)
{
	if (n > AP_MEMORY_WORD_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!word_char(s[i]))
			return false;
	return true;
}

/* Length of s, at most cap (then not NUL-terminated: rejected). */
static size_t bounded_len(const char *s, size_t cap)
{
	const char *z = memchr(s, '\0', cap);
	return z ? (size_t)(z - s) : cap;
}

typedef struct obuf {
	char *p;
	size_t cap, n;
	bool full;
} obuf;

static void put(obuf *o, const char *s, size_t n)
{
	if (o->full || n >= o->cap - o->n) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
	o->p[o->n] = '\0';
}

static void put_line(obuf *o, const char *key, const char *val, size_t vn)
{
	put(o, key, strlen(key));
	put(o, "=", 1);
	put(o, val, vn);
	put(o, "\n", 1);
}

int ap_memory_encode(const ap_memory *m, char *buf, size_t cap, size_t *len)
{
	if (!m || !buf || cap == 0)
		return AP_EINVAL;
	size_t na = bounded_len(m->allocator, sizeof m->allocator);
	size_t ns = bounded_len(m->source, sizeof m->source);
	if (!word_ok(m->allocator, na) || !word_ok(m->source, ns))
		return AP_EINVAL;
	obuf o = { buf, cap, 0, false };
	buf[0] = '\0';
	if (na)
		put_line(&o, "allocator", m->allocator, na);
	if (ns)
		put_line(&o, "source", m->source, ns);
	for (unsigned k = 0; k < AP_MEM_NKEYS; k++) {
		if (!(m->have & (1u << k)))
			continue;
		char digits[24];
		size_t i = sizeof digits;
		uint64_t v = m->v[k];
		do {
			digits[--i] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		put_line(&o, key_names[k], digits + i, sizeof digits - i);
	}
	if (o.full)
		return AP_ERANGE;
	if (len)
		*len = o.n;
	return 0;
}

static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	if (n == 0 || n > 20)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool key_is(const char *k, size_t kn, const char *name)
{
	return strlen(name) == kn && memcmp(k, name, kn) == 0;
}

/* One "key=value" line; false when it is malformed. */
static bool decode_line(const char *k, size_t kn, const char *v, size_t vn,
			ap_memory *m, bool *seen_alloc, bool *seen_src)
{
	if (key_is(k, kn, "allocator") || key_is(k, kn, "source")) {
		bool alloc = k[0] == 'a';
		bool *seen = alloc ? seen_alloc : seen_src;
		char *dst = alloc ? m->allocator : m->source;
		if (*seen || !word_ok(v, vn))
			return false;
		*seen = true;
		memcpy(dst, v, vn);
		dst[vn] = '\0';
		return true;
	}
	for (unsigned i = 0; i < AP_MEM_NKEYS; i++) {
		if (!key_is(k, kn, key_names[i]))
			continue;
		uint64_t x;
		if ((m->have & (1u << i)) || !parse_u64(v, vn, &x))
			return false;
		ap_memory_set(m, (ap_memory_key)i, x);
		return true;
	}
	return true; /* a key of a later version */
}

int ap_memory_decode(const void *data, size_t len, ap_memory *m)
{
	if (!m || (!data && len))
		return AP_EINVAL;
	memset(m, 0, sizeof *m);
	const char *s = data;
	bool seen_alloc = false, seen_src = false;
	size_t i = 0;
	while (i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - s) : len;
		const char *eq = memchr(s + i, '=', end - i);
		if (!eq || eq == s + i ||
		    !decode_line(s + i, (size_t)(eq - (s + i)), eq + 1,
				 end - (size_t)(eq + 1 - s), m, &seen_alloc, &seen_src)) {
			memset(m, 0, sizeof *m);
			return AP_ECORRUPT;
		}
		i = end + 1;
	}
	return 0;
}
