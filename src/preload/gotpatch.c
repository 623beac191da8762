/*
 * gotpatch.c: rewriting GOT entries of loaded objects (gotpatch.h).
 */
#include <stdint.h>

#include "gotpatch.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct patch_ctx {
	const got_hook *hooks;
	size_t n;
	uintptr_t skip_a, skip_b;
	int changed;
} patch_ctx;

/* What the dynamic section says about one object. */
typedef struct dyn_info {
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const ElfW(Rela) *jmprel;
	size_t jmprelsz;
	const ElfW(Rela) *rela;
	size_t relasz;
	bool plt_is_rela;
} dyn_info;

/* glibc relocates the dynamic section's pointers in place on x86_64; an
 * entry below the load address (unrelocated, or an executable's) is an
 * offset from it. */
static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}

static bool read_dynamic(uintptr_t base, const ElfW(Dyn) *d, dyn_info *out)
{
	memset(out, 0, sizeof *out);
	out->plt_is_rela = true;
	for (; d->d_tag != DT_NULL; d++) {
		uintptr_t v = (uintptr_t)d->d_un.d_ptr;
		switch (d->d_tag) {
		case DT_SYMTAB: out->symtab = (const ElfW(Sym) *)dyn_ptr(base, v); break;
		case DT_STRTAB: out->strtab = (const char *)dyn_ptr(base, v); break;
		case DT_STRSZ: out->strsz = (size_t)d->d_un.d_val; break;
		case DT_JMPREL: out->jmprel = (const ElfW(Rela) *)dyn_ptr(base, v); break;
		case DT_PLTRELSZ: out->jmprelsz = (size_t)d->d_un.d_val; break;
		case DT_PLTREL: out->plt_is_rela = d->d_un.d_val == DT_RELA; break;
		case DT_RELA: out->rela = (const ElfW(Rela) *)dyn_ptr(base, v); break;
		case DT_RELASZ: out->relasz = (size_t)d->d_un.d_val; break;
		default: break;
		}
	}
	return out->symtab && out->strtab && out->strsz && out->plt_is_rela;
}

/* The hook for relocation r, or NULL. */
static const got_hook *hook_of(const patch_ctx *c, const dyn_info *di, const ElfW(Rela) *r)
{
	unsigned long type = ELF64_R_TYPE(r->r_info);
	if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
		return NULL;
	size_t sym = ELF64_R_SYM(r->r_info);
	if (sym == 0)
		return NULL;
	size_t off = di->symtab[sym].st_name;
	if (off >= di->strsz)
		return NULL;
	const char *name = di->strtab + off;
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(name, c->hooks[i].name) == 0)
			return &c->hooks[i];
	return NULL;
}

/* The RELRO range an entry may lie in, page-aligned as the loader made it
 * read-only: [lo, hi), both rounded down (the rest of the last page stays
 * writable data). */
static void relro_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	*lo = *hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_RELRO) {
			uintptr_t s = info->dlpi_addr + ph->p_vaddr;
			*lo = s & ~(pg - 1);
			*hi = (s + ph->p_memsz) & ~(pg - 1);
		}
	}
}

/* Patch the entries of one relocation table; relro tells whether the
 * RELRO range was already opened (opened on the first entry inside it). */
static void patch_table(patch_ctx *c, const dyn_info *di, uintptr_t base,
			const ElfW(Rela) *tab, size_t bytes, uintptr_t lo,
			uintptr_t hi, bool *opened)
{
	if (!tab)
		return;
	for (size_t i = 0; i < bytes / sizeof *tab; i++) {
		const got_hook *h = hook_of(c, di, &tab[i]);
		if (!h)
			continue;
		void **slot = (void **)(base + tab[i].r_offset);
		if (__atomic_load_n(slot, __ATOMIC_RELAXED) == h->fn)
			continue;
		uintptr_t a = (uintptr_t)slot;
		if (a >= lo && a < hi && !*opened) {
			if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
				continue;
			*opened = true;
		}
		if (a >= lo && a < hi && !*opened)
			continue;
		__atomic_store_n(slot, h->fn, __ATOMIC_RELEASE);
		c->changed++;
	}
}

static bool skipped_name(const char *name)
{
	return strstr(name, "linux-vdso") || strstr(name, "linux-gate") ||
	       strstr(name, "/ld-linux") || strncmp(name, "ld-linux", 8) == 0;
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	patch_ctx *c = arg;
	uintptr_t base = info->dlpi_addr;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if ((c->skip_a && base == c->skip_a) || (c->skip_b && base == c->skip_b) ||
	    skipped_name(name))
		return 0;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
	dyn_info di;
	if (!dyn || !read_dynamic(base, dyn, &di))
		return 0;
	uintptr_t lo, hi;
	relro_range(info, &lo, &hi);
	bool opened = false;
	patch_table(c, &di, base, di.jmprel, di.jmprelsz, lo, hi, &opened);
	patch_table(c, &di, base, di.rela, di.relasz, lo, hi, &opened);
	if (opened)
		(void)mprotect((void *)lo, hi - lo, PROT_READ);
	return 0;
}

int gotpatch_all(const got_hook *hooks, size_t n, uintptr_t skip_a, uintptr_t skip_b)
{
	patch_ctx c = { hooks, n, skip_a, skip_b, 0 };
	dl_iterate_phdr(patch_object, &c);
	return c.changed;
}
