/*
 * elfsym.c: function names from an ELF object's symbol tables (elfsym.h).
 *
 * Nothing read from the file is trusted: each header, table and string is
 * first checked to lie inside the file (in_file, in 64-bit arithmetic on
 * values that cannot overflow it), and counts are bounded by the file's
 * size before any loop runs over them.
 */
#include "elfsym.h"

#include <string.h>

#if __SIZEOF_POINTER__ == 8
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_DATA ELFDATA2LSB
#else
#define NATIVE_DATA ELFDATA2MSB
#endif

/* [off, off + len) lies inside the file. */
static bool in_file(const elfsym_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

static int read_at(const elfsym_file *f, uint64_t off, void *buf, size_t n)
{
	return in_file(f, off, n) && f->read(f->ctx, off, buf, n) == 0 ? 0 : -1;
}

int elfsym_open(elfsym_file *f)
{
	ElfW(Ehdr) *eh = &f->eh;
	f->shnum = 0;
	if (read_at(f, 0, eh, sizeof *eh) != 0 || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != NATIVE_CLASS || eh->e_ident[EI_DATA] != NATIVE_DATA ||
	    eh->e_ident[EI_VERSION] != EV_CURRENT)
		return AP_ECORRUPT;
	if (eh->e_phnum && (eh->e_phentsize != sizeof(ElfW(Phdr)) ||
			    !in_file(f, eh->e_phoff,
				     (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)))))
		return AP_ECORRUPT;
	if (!eh->e_shoff)
		return 0;
	if (eh->e_shentsize != sizeof(ElfW(Shdr)))
		return AP_ECORRUPT;
	uint64_t n = eh->e_shnum;
	if (n == 0) {
		/* Extended numbering: the count is section 0's sh_size. */
		ElfW(Shdr) s0;
		if (read_at(f, eh->e_shoff, &s0, sizeof s0) != 0)
			return AP_ECORRUPT;
		n = s0.sh_size;
	}
	if (n > f->size / sizeof(ElfW(Shdr)) ||
	    !in_file(f, eh->e_shoff, n * sizeof(ElfW(Shdr))))
		return AP_ECORRUPT;
	f->shnum = n;
	return 0;
}

static int phdr(const elfsym_file *f, size_t i, ElfW(Phdr) *ph)
{
	return read_at(f, f->eh.e_phoff + (uint64_t)i * sizeof *ph, ph, sizeof *ph);
}

int elfsym_segment_vaddr(const elfsym_file *f, uint64_t off, uint64_t *vaddr)
{
	ElfW(Phdr) ph;
	for (size_t i = 0; i < f->eh.e_phnum; i++) {
		if (phdr(f, i, &ph) != 0)
			return AP_ECORRUPT;
		if (ph.p_type == PT_LOAD && ph.p_offset == off) {
			*vaddr = ph.p_vaddr;
			return 0;
		}
	}
	return AP_ENOTFOUND;
}

/* The build ID in one note segment [off, off + len), aligned to al. */
static int note_build_id(const elfsym_file *f, uint64_t off, uint64_t len,
			 uint64_t al, char *hex, size_t cap)
{
	static const char digits[] = "0123456789abcdef";
	if (!in_file(f, off, len))
		return AP_ECORRUPT;
	uint64_t pos = 0;
	while (len - pos >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		if (read_at(f, off + pos, &nh, sizeof nh) != 0)
			return AP_ECORRUPT;
		uint64_t name = ((uint64_t)nh.n_namesz + al - 1) & ~(al - 1);
		uint64_t desc = ((uint64_t)nh.n_descsz + al - 1) & ~(al - 1);
		uint64_t body = off + pos + sizeof nh;
		if (name + desc > len - pos - sizeof nh)
			return AP_ECORRUPT;
		char who[4];
		unsigned char id[64];
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0 &&
		    nh.n_descsz <= sizeof id && 2 * (size_t)nh.n_descsz < cap &&
		    read_at(f, body, who, 4) == 0 && memcmp(who, "GNU", 4) == 0) {
			if (read_at(f, body + name, id, nh.n_descsz) != 0)
				return AP_ECORRUPT;
			for (size_t i = 0; i < nh.n_descsz; i++) {
				hex[2 * i] = digits[id[i] >> 4];
				hex[2 * i + 1] = digits[id[i] & 15];
			}
			hex[2 * nh.n_descsz] = '\0';
			return 0;
		}
		pos += sizeof nh + name + desc;
	}
	return AP_ENOTFOUND;
}

int elfsym_build_id(const elfsym_file *f, char *hex, size_t cap)
{
	ElfW(Phdr) ph;
	for (size_t i = 0; i < f->eh.e_phnum; i++) {
		if (phdr(f, i, &ph) != 0)
			return AP_ECORRUPT;
		if (ph.p_type != PT_NOTE)
			continue;
		int rc = note_build_id(f, ph.p_offset, ph.p_filesz, ph.p_align == 8 ? 8 : 4,
				       hex, cap);
		if (rc != AP_ENOTFOUND)
			return rc;
	}
	return AP_ENOTFOUND;
}

void elfsym_sort(elfsym_query *q, size_t n)
{
	/* Shell sort with Knuth's gaps (1, 4, 13, ...): no allocation, no
	 * qsort (which may call malloc). */
	size_t g = 1;
	while (g < n / 3)
		g = 3 * g + 1;
	for (; g > 0; g /= 3) {
		for (size_t i = g; i < n; i++) {
			elfsym_query t = q[i];
			size_t j = i;
			for (; j >= g && q[j - g].vaddr > t.vaddr; j -= g)
				q[j] = q[j - g];
			q[j] = t;
		}
	}
}

/* Index of the first query with vaddr >= v. */
static size_t lower_bound(const elfsym_query *q, size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (q[mid].vaddr < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void consider(elfsym_query *q, size_t n, const ElfW(Sym) *s,
		     const ElfW(Shdr) *str)
{
	unsigned type = s->st_info & 0xf, bind = s->st_info >> 4;
	if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF ||
	    s->st_name == 0 || s->st_name >= str->sh_size)
		return;
	bool sized = s->st_size > 0;
	uint64_t lo = s->st_value, span = sized ? s->st_size : ELFSYM_UNSIZED_SPAN;
	unsigned rank = (bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : 1) + (sized ? 4 : 0);
	for (size_t a = lower_bound(q, n, lo); a < n && q[a].vaddr - lo < span; a++) {
		elfsym_query *x = &q[a];
		bool was_sized = x->rank >= 4;
		if (x->name_off && (was_sized != sized ? was_sized
				    : lo != x->start ? lo < x->start : rank <= x->rank))
			continue;
		x->name_off = str->sh_offset + s->st_name;
		x->name_max = str->sh_size - s->st_name;
		x->start = lo;
		x->rank = rank;
	}
}

static int shdr(const elfsym_file *f, uint64_t i, ElfW(Shdr) *sh)
{
	return read_at(f, f->eh.e_shoff + i * sizeof *sh, sh, sizeof *sh);
}

int elfsym_lookup(const elfsym_file *f, uint32_t type, elfsym_query *q, size_t n,
		  void *buf, size_t bufsz)
{
	ElfW(Shdr) sh, str;
	uint64_t i = 0;
	for (; i < f->shnum; i++) {
		if (shdr(f, i, &sh) != 0)
			return AP_ECORRUPT;
		if (sh.sh_type == type)
			break;
	}
	if (i == f->shnum)
		return AP_ENOTFOUND;
	size_t per = bufsz / sizeof(ElfW(Sym));
	if (per == 0)
		return AP_EINVAL;
	if (sh.sh_entsize != sizeof(ElfW(Sym)) || !in_file(f, sh.sh_offset, sh.sh_size) ||
	    sh.sh_link >= f->shnum || shdr(f, sh.sh_link, &str) != 0 ||
	    str.sh_type != SHT_STRTAB || !in_file(f, str.sh_offset, str.sh_size))
		return AP_ECORRUPT;
	uint64_t count = sh.sh_size / sizeof(ElfW(Sym));
	ElfW(Sym) *syms = buf;
	for (uint64_t k = 0; k < count; k += per) {
		size_t m = count - k < per ? (size_t)(count - k) : per;
		if (read_at(f, sh.sh_offset + k * sizeof *syms, syms, m * sizeof *syms) != 0)
			return AP_ECORRUPT;
		for (size_t j = 0; j < m; j++)
			consider(q, n, &syms[j], &str);
	}
	return 0;
}

size_t elfsym_name(const elfsym_file *f, const elfsym_query *q, char *out, size_t cap)
{
	if (cap == 0)
		return 0;
	size_t len = 0;
	char chunk[256];
	while (q->name_off && len + 1 < cap) {
		uint64_t want = cap - 1 - len;
		if (want > sizeof chunk)
			want = sizeof chunk;
		if (want > q->name_max - len)
			want = q->name_max - len;
		if (want == 0 || read_at(f, q->name_off + len, chunk, (size_t)want) != 0)
			break;
		for (size_t i = 0; i < want; i++) {
			unsigned char c = (unsigned char)chunk[i];
			/* '@': a version ("malloc@@GLIBC_2.2.5" in debug
			 * files' tables), not part of the function's name. */
			if (c < 0x20 || c > 0x7e || c == '@') {
				out[len] = '\0';
				return len;
			}
			out[len++] = (char)c;
		}
	}
	out[len] = '\0';
	return len;
}
