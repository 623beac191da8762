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

/* ---- function starts from the unwind tables ------------------------- */

/* File offset of [v, v + len) when one PT_LOAD segment's file bytes hold it. */
static int vaddr_offset(const elfsym_file *f, uint64_t v, uint64_t len, uint64_t *off)
{
	ElfW(Phdr) ph;
	for (size_t i = 0; i < f->eh.e_phnum; i++) {
		if (phdr(f, i, &ph) != 0)
			return AP_ECORRUPT;
		if (ph.p_type == PT_LOAD && v >= ph.p_vaddr && v - ph.p_vaddr <= ph.p_filesz &&
		    len <= ph.p_filesz - (v - ph.p_vaddr)) {
			*off = ph.p_offset + (v - ph.p_vaddr);
			return in_file(f, *off, len) ? 0 : AP_ECORRUPT;
		}
	}
	return AP_ENOTFOUND;
}

/* Bytes of a DWARF pointer encoding's value (its low four bits; absptr is
 * a pointer of this process's size); 0 for the variable-length ones. */
static size_t enc_size(unsigned enc)
{
	switch (enc & 0x0f) {
	case 0x00: return sizeof(uintptr_t);
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

/* The value of n (enc_size) bytes at p, sign-extended for the signed formats. */
static uint64_t enc_value(const unsigned char *p, size_t n, unsigned enc)
{
	uint64_t v = 0;
	unsigned char *d = (unsigned char *)&v;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(d, p, n);
#else
	memcpy(d + 8 - n, p, n);
#endif
	if ((enc & 0x08) && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * n);
	return v;
}

/* A ULEB128 in buf[*i, n): false when it runs past n or over 64 bits. */
static bool uleb(const unsigned char *buf, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *i < n && shift < 64; shift += 7) {
		unsigned char b = buf[(*i)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Read a CIE or FDE's header at file offset off (up to sizeof *buf bytes
 * of it into buf, fewer at the end of the file): *n the bytes read, *body
 * where its content (after the length) starts. */
static int cfi_entry(const elfsym_file *f, uint64_t off, unsigned char (*buf)[96],
		     size_t *n, size_t *body)
{
	if (off > f->size)
		return AP_ECORRUPT;
	*n = f->size - off < sizeof *buf ? (size_t)(f->size - off) : sizeof *buf;
	if (*n < 8 || read_at(f, off, *buf, *n) != 0)
		return AP_ECORRUPT;
	uint32_t len32;
	memcpy(&len32, *buf, 4);
	if (len32 == 0)
		return AP_ENOTFOUND; /* the terminator */
	*body = len32 == 0xffffffffu ? 12 : 4;
	uint64_t len = len32;
	if (len32 == 0xffffffffu)
		memcpy(&len, *buf + 4, 8);
	if (*body + 4 > *n || len < 4 || !in_file(f, off + *body, len))
		return AP_ECORRUPT;
	if (len < *n - *body)
		*n = *body + (size_t)len;
	return 0;
}

/* The FDE pointer encoding of the CIE at file offset off. */
static int cie_encoding(const elfsym_file *f, uint64_t off, unsigned *enc)
{
	unsigned char buf[96];
	size_t n, i;
	int rc = cfi_entry(f, off, &buf, &n, &i);
	if (rc != 0)
		return rc == AP_ENOTFOUND ? AP_ECORRUPT : rc;
	uint32_t id;
	memcpy(&id, buf + i, 4);
	i += 4;
	if (id != 0 || i >= n)
		return AP_ECORRUPT; /* not a CIE */
	unsigned version = buf[i++];
	const char *aug = (const char *)buf + i;
	size_t alen = strnlen(aug, n - i);
	if (alen == n - i)
		return AP_ECORRUPT;
	i += alen + 1;
	*enc = 0; /* absptr unless "R" says otherwise */
	if (aug[0] != 'z')
		return alen == 0 ? 0 : AP_ENOTFOUND;
	uint64_t skip;
	if (!uleb(buf, n, &i, &skip) || !uleb(buf, n, &i, &skip)) /* code, data align */
		return AP_ECORRUPT;
	if (version == 1) {
		if (i >= n)
			return AP_ECORRUPT;
		i++; /* return address register */
	} else if (!uleb(buf, n, &i, &skip)) {
		return AP_ECORRUPT;
	}
	if (!uleb(buf, n, &i, &skip)) /* augmentation data's length */
		return AP_ECORRUPT;
	for (size_t k = 1; k < alen; k++) {
		if (i >= n)
			return AP_ECORRUPT;
		switch (aug[k]) {
		case 'R':
			*enc = buf[i];
			return 0;
		case 'L':
			i++;
			break;
		case 'P': {
			size_t ps = enc_size(buf[i]);
			if (!ps || (buf[i] & 0x70) == 0x50) /* aligned: unsupported */
				return AP_ENOTFOUND;
			i += 1 + ps;
			break;
		}
		case 'S': case 'B':
			break;
		default:
			return AP_ENOTFOUND;
		}
	}
	return 0;
}

int elfsym_function_start(const elfsym_file *f, uint64_t vaddr, uint64_t *start,
			  uint64_t *off)
{
	ElfW(Phdr) eh;
	size_t i = 0;
	for (; i < f->eh.e_phnum; i++) {
		if (phdr(f, i, &eh) != 0)
			return AP_ECORRUPT;
		if (eh.p_type == PT_GNU_EH_FRAME)
			break;
	}
	if (i == f->eh.e_phnum)
		return AP_ENOTFOUND;
	unsigned char h[4 + 8 + 8];
	uint64_t hlen = eh.p_filesz < sizeof h ? eh.p_filesz : sizeof h;
	if (hlen < 4 || !in_file(f, eh.p_offset, eh.p_filesz) ||
	    read_at(f, eh.p_offset, h, (size_t)hlen) != 0)
		return AP_ECORRUPT;
	size_t ps = enc_size(h[1]), cs = enc_size(h[2]);
	if (h[0] != 1 || h[3] != 0x3b || !ps || !cs || 4 + ps + cs > hlen)
		return AP_ENOTFOUND;
	uint64_t count = enc_value(h + 4 + ps, cs, h[2] & 0x07); /* unsigned */
	uint64_t table = 4 + ps + cs;
	if (count == 0 || count > (eh.p_filesz - table) / 8)
		return count == 0 ? AP_ENOTFOUND : AP_ECORRUPT;
	/* The last entry starting at or below vaddr. */
	uint64_t lo = 0, hi = count;
	int32_t e[2];
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (read_at(f, eh.p_offset + table + 8 * mid, e, 4) != 0)
			return AP_ECORRUPT;
		if (eh.p_vaddr + (uint64_t)(int64_t)e[0] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return AP_ENOTFOUND;
	if (read_at(f, eh.p_offset + table + 8 * (lo - 1), e, 8) != 0)
		return AP_ECORRUPT;
	uint64_t fn = eh.p_vaddr + (uint64_t)(int64_t)e[0];
	uint64_t fde = eh.p_vaddr + (uint64_t)(int64_t)e[1], fde_off;
	unsigned char buf[96];
	size_t n, b;
	int rc = vaddr_offset(f, fde, 8, &fde_off);
	if (rc != 0 || (rc = cfi_entry(f, fde_off, &buf, &n, &b)) != 0)
		return rc == AP_ENOTFOUND ? AP_ECORRUPT : rc;
	uint32_t cie_ptr;
	memcpy(&cie_ptr, buf + b, 4);
	uint64_t cie_off = fde_off + b - cie_ptr;
	unsigned enc;
	if (cie_ptr == 0 || cie_ptr > fde_off + b ||
	    (rc = cie_encoding(f, cie_off, &enc)) != 0)
		return rc ? rc : AP_ECORRUPT;
	size_t es = enc_size(enc), at = b + 4;
	unsigned app = enc & 0x70;
	if (!es || (app != 0x00 && app != 0x10) || at + 2 * es > n)
		return AP_ENOTFOUND;
	uint64_t begin = enc_value(buf + at, es, enc);
	if (app == 0x10) /* pcrel: from the field's own address */
		begin += fde + at;
	uint64_t range = enc_value(buf + at + es, es, enc & 0x07);
	if (begin != fn || vaddr - begin >= range)
		return AP_ENOTFOUND;
	*start = begin;
	return vaddr_offset(f, begin, 1, off);
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
