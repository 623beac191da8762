/*
 * symbolize.c: libdw symbolization of profile addresses (see symbolize.h).
 *
 * One Dwfl session per object file, the file reported at base 0 so that
 * module addresses are the ELF's own virtual addresses (plus the bias libdwfl
 * reports). A profile address maps to an ELF address through its mapping:
 * the PT_LOAD segment holding the mapping's file offset gives the virtual
 * address of memory_start. Debug information is found by libdwfl's standard
 * search (build ID under /usr/lib/debug/.build-id/xx/rest.debug, then
 * .gnu_debuglink). Inline frames come from the DWARF scopes around the
 * address: each DW_TAG_inlined_subroutine's call_file/call_line is the
 * position in the function it was inlined into. The function DIEs of each
 * compile unit are indexed by address on the unit's first address
 * (dwindex.h), so that an address costs a binary search, not a walk of
 * the unit.
 *
 * The profile is rewritten through hv_profile_merge_ex, which copies it and
 * asks this file for each location's lines; results are cached per (file,
 * ELF address), so each unique address is looked up once however many
 * processes (ASLR) or locations share it.
 */
#define _GNU_SOURCE
#include "symbolize.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "demangle.h"
#include "dwindex.h"
#include "dwlambda.h"
#include "keymap.h"
#include "profmerge.h"

#define MAX_INLINE 64

void sym_options_default(sym_options *o)
{
	memset(o, 0, sizeof *o);
	o->progress = true;
	o->require_main = true;
	o->warn = true;
}

/* ---- object files ---------------------------------------------------- */

/* A function symbol [lo, hi) (hi = lo when its size is unknown). */
struct fsym {
	GElf_Addr lo, hi;
	const char *name; /* owned by libdwfl */
	int global;
};

/* A compile unit's address range, as its DIE says (DW_AT_ranges or
 * low_pc/high_pc), in module addresses. */
struct curange {
	Dwarf_Addr lo, hi, bias;
	Dwarf_Die *cu; /* owned by libdwfl */
};

struct symfile {
	char *path, *build_id; /* as in the profile */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr bias;
	bool usable;
	struct fsym *syms; /* sorted by lo; built on first lookup */
	size_t nsyms;
	bool syms_built;
	uint64_t *fstarts; /* functions' starts (.eh_frame_hdr), ascending */
	size_t nfstarts;
	bool fstarts_built;
	struct curange *curanges; /* sorted by lo; built when aranges fail */
	size_t ncuranges;
	bool curanges_built;
	hv_keymap *cumap; /* (Dwarf, CU DIE offset) -> cus index */
	struct cuinfo *cus;
	size_t ncus;
	char *debuginfo_path;
	Dwfl_Callbacks cb;
};

/* A compile unit met: its function index and its lambdas (built on
 * first use). */
struct cuinfo {
	dwi_index *ix;  /* NULL: the CU could not be indexed */
	dwl_map *lams;  /* NULL: the CU's lambdas could not be listed */
	bool lams_built;
};

/* A cached lookup: lines[first .. first+n) in the context's arrays. */
struct symres {
	size_t first, n;
};

struct symctx {
	const sym_options *o;
	struct symfile *files;
	size_t nfiles;
	hv_keymap *filemap; /* path \0 build_id -> files index */
	hv_keymap *cache;   /* (file, ELF addr) -> results index */
	struct symres *res;
	size_t nres, capres;
	hv_sym_line *lines; /* cached lines; names in strs */
	size_t nlines, caplines;
	hv_strpool strs; /* names, files (stable for the merger) */
	hv_sym_line cur[MAX_INLINE]; /* lines handed to the merger */
	sym_stats st;
	size_t total_locs, done_locs;
	struct timespec t0;
	bool progress_shown, oom;
	const char *main_path; /* first mapping with samples */
	char *err;
	size_t errlen;
	int fail;
};

static void warnf(struct symctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warnf(struct symctx *c, const char *fmt, ...)
{
	va_list ap;
	if (!c->o->warn)
		return;
	if (c->progress_shown) {
		fputs("\r\033[K", stderr);
		c->progress_shown = false;
	}
	fputs("allocprof: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char *hex(const unsigned char *b, int n)
{
	char *s = malloc((size_t)n * 2 + 1);
	if (!s)
		return NULL;
	for (int i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", b[i]);
	s[2 * n] = 0;
	return s;
}

/* "/usr/lib/debug/.build-id/ab/cdef....debug" for a hex build ID. */
static char *build_id_path(const char *root, const char *id)
{
	char *p = NULL;
	if (strlen(id) < 4 || asprintf(&p, "%s/.build-id/%.2s/%s.debug", root, id,
				       id + 2) < 0)
		return NULL;
	return p;
}

static bool open_dwfl(struct symfile *f, const char *elf_path,
		      const sym_options *o)
{
	f->cb.find_elf = dwfl_build_id_find_elf;
	f->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	f->cb.section_address = dwfl_offline_section_address;
	if (o->debug_dir && asprintf(&f->debuginfo_path, "+:.debug:%s:/usr/lib/debug",
				     o->debug_dir) < 0)
		f->debuginfo_path = NULL;
	f->cb.debuginfo_path = f->debuginfo_path ? &f->debuginfo_path : NULL;
	f->dwfl = dwfl_begin(&f->cb);
	if (!f->dwfl)
		return false;
	dwfl_report_begin(f->dwfl);
	f->mod = dwfl_report_elf(f->dwfl, elf_path, elf_path, -1, 0, false);
	dwfl_report_end(f->dwfl, NULL, NULL);
	return f->mod && dwfl_module_getelf(f->mod, &f->bias);
}

/* Open path (or its build-ID debug file) and check the build ID once. */
static void open_file(struct symctx *c, struct symfile *f)
{
	const char *path = f->path;
	char *alt = NULL;
	struct stat sb;
	if (stat(path, &sb) != 0) {
		const char *root = c->o->debug_dir ? c->o->debug_dir : "/usr/lib/debug";
		alt = *f->build_id ? build_id_path(root, f->build_id) : NULL;
		if (!alt || stat(alt, &sb) != 0) {
			int e = errno;
			free(alt);
			c->st.mappings_skipped++;
			if (c->main_path && !strcmp(c->main_path, f->path) &&
			    c->o->require_main) {
				snprintf(c->err, c->errlen,
					 "%s: %s (the profiled program is needed to "
					 "symbolize; use --no-symbolize for addresses)",
					 f->path, strerror(e));
				c->fail = AP_ENOTFOUND;
			} else {
				warnf(c, "%s: %s; its frames stay unsymbolized",
				      f->path, strerror(e));
			}
			return;
		}
		path = alt;
	}
	if (!open_dwfl(f, path, c->o)) {
		warnf(c, "%s: cannot read ELF file: %s; its frames stay unsymbolized",
		      path, dwfl_errmsg(-1));
		c->st.mappings_skipped++;
		free(alt);
		return;
	}
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(f->mod, &bits, &vaddr);
	char *have = n > 0 ? hex(bits, n) : NULL;
	if (*f->build_id && have && strcasecmp(have, f->build_id)) {
		warnf(c, "%s: build ID %s differs from the profile's %s (the file "
		      "changed since profiling); its frames stay unsymbolized",
		      path, have, f->build_id);
		c->st.mappings_skipped++;
	} else {
		f->usable = true;
	}
	free(have);
	free(alt);
}

static struct symfile *file_for(struct symctx *c, const char *path,
				const char *build_id)
{
	size_t lp = strlen(path), lb = strlen(build_id);
	char *key = malloc(lp + lb + 2);
	if (!key)
		return NULL;
	memcpy(key, path, lp + 1);
	memcpy(key + lp + 1, build_id, lb + 1);
	size_t i = hv_keymap_get(c->filemap, key, lp + lb + 2);
	if (i == SIZE_MAX) {
		struct symfile *nf = realloc(c->files, (c->nfiles + 1) * sizeof *nf);
		if (!nf) {
			free(key);
			return NULL;
		}
		c->files = nf;
		i = c->nfiles;
		memset(&nf[i], 0, sizeof nf[i]);
		nf[i].path = strdup(path);
		nf[i].build_id = strdup(build_id);
		if (!nf[i].path || !nf[i].build_id ||
		    hv_keymap_put(c->filemap, key, lp + lb + 2, i)) {
			free(nf[i].path);
			free(nf[i].build_id);
			free(key);
			return NULL;
		}
		c->nfiles++;
		open_file(c, &nf[i]);
	}
	free(key);
	return &c->files[i];
}

/* ---- address lookup -------------------------------------------------- */

/* A stable copy of s (deduplicated); NULL becomes "". */
static const char *keep(struct symctx *c, const char *s)
{
	const char *k = s ? hv_strpool_get(&c->strs, s) : "";
	if (!k) {
		c->oom = true;
		return "";
	}
	return k;
}

/* Linkage name (mangled) of a DIE, following abstract_origin/specification. */
static const char *die_linkage(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		return dwarf_formstring(&a);
	return NULL;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, DW_AT_name, &a) ? dwarf_formstring(&a)
							  : NULL;
}

struct rawframe {
	char *name;          /* malloc'd display name */
	const char *sysname; /* mangled, or NULL */
	const char *file;
	int line, col;
};

/*
 * Display name: demangled linkage name, else plain name, else symbol. A
 * plain name can itself be mangled: LLVM's line-tables-only DWARF (Rust's
 * prebuilt standard library) names each function by its symbol.
 */
static char *display_name(const char *linkage, const char *plain)
{
	char *d = linkage ? fn_demangle(linkage) : NULL;
	if (d)
		return d;
	if (plain)
		return (d = fn_demangle(plain)) ? d : strdup(plain);
	return linkage ? strdup(linkage) : NULL;
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *inl)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t nfiles;
	if (!dwarf_attr(inl, DW_AT_call_file, &a) || dwarf_formudata(&a, &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static int attr_int(Dwarf_Die *d, int name)
{
	Dwarf_Attribute a;
	Dwarf_Word v;
	return dwarf_attr(d, name, &a) && !dwarf_formudata(&a, &v) ? (int)v : 0;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* at one address prefer a sized, then a global symbol */
	if ((x->hi > x->lo) != (y->hi > y->lo))
		return x->hi > x->lo ? -1 : 1;
	return y->global - x->global;
}

/*
 * The module's function symbols, sorted once: libdwfl's own address lookup
 * scans the whole symbol table for every address, which dominated
 * symbolizing profiles of large binaries (bench/suites/report.sh).
 */
static void build_syms(struct symfile *f)
{
	f->syms_built = true;
	int n = dwfl_module_getsymtab(f->mod);
	if (n <= 0 || !(f->syms = malloc((size_t)n * sizeof *f->syms)))
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(f->mod, i, &sym, &addr,
							   &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		f->syms[f->nsyms++] = (struct fsym){
			addr, addr + sym.st_size, name,
			GELF_ST_BIND(sym.st_info) != STB_LOCAL};
	}
	qsort(f->syms, f->nsyms, sizeof *f->syms, fsym_cmp);
}

/* Name of the function symbol containing a (sizeless: up to the next). */
static const char *symbol_at(struct symfile *f, GElf_Addr a)
{
	if (!f->syms_built)
		build_syms(f);
	size_t lo = 0, hi = f->nsyms;
	while (lo < hi) { /* first symbol with lo > a */
		size_t mid = lo + (hi - lo) / 2;
		if (f->syms[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* symbols starting at the last start <= a (aliases): a sized one that
	 * contains a, else a sizeless one, which extends to the next start */
	if (lo == 0)
		return NULL;
	GElf_Addr start = f->syms[lo - 1].lo;
	const char *sizeless = NULL;
	for (size_t i = lo; i-- > 0 && f->syms[i].lo == start;) {
		if (f->syms[i].hi > a)
			return f->syms[i].name;
		if (f->syms[i].hi == start)
			sizeless = f->syms[i].name;
	}
	return sizeless;
}

/*
 * What the symbolizer keeps of the compile unit cu: made on the unit's
 * first address, NULL without memory. Keyed by the unit's Dwarf as well
 * as its offset: a split unit has offsets of its own file.
 */
static struct cuinfo *cu_info(struct symfile *f, Dwarf_Die *cu)
{
	uint64_t key[2] = {(uint64_t)(uintptr_t)dwarf_cu_getdwarf(cu->cu),
			   dwarf_dieoffset(cu)};
	if (!f->cumap && !(f->cumap = hv_keymap_new()))
		return NULL;
	size_t i = hv_keymap_get(f->cumap, key, sizeof key);
	if (i != SIZE_MAX)
		return &f->cus[i];
	/* one more slot per unit: a profile meets few units of a file */
	struct cuinfo *all = realloc(f->cus, (f->ncus + 1) * sizeof *all);
	if (!all)
		return NULL;
	f->cus = all;
	if (hv_keymap_put(f->cumap, key, sizeof key, f->ncus))
		return NULL;
	/* NULL when it cannot be built (bad DWARF, out of memory): the
	 * unit's addresses then take libdw's scope walk */
	f->cus[f->ncus] = (struct cuinfo){dwi_build(cu), NULL, false};
	return &f->cus[f->ncus++];
}

/* The lambdas of unit cu (dwlambda.h), listed on first use: only frames
 * GCC left nameless ask. */
static dwl_map *cu_lambdas(struct symfile *f, Dwarf_Die *cu)
{
	struct cuinfo *u = cu_info(f, cu);
	if (u && !u->lams_built) {
		u->lams = dwl_build(cu);
		u->lams_built = true;
	}
	return u ? u->lams : NULL;
}

/* "operator()", or a template instance's "operator()<int>": what GCC's
 * DWARF calls a lambda's operator(), and nothing more. */
static bool is_call_operator(const char *name)
{
	return strncmp(name, "operator()", 10) == 0 && (!name[10] || name[10] == '<');
}

/*
 * The name of fn when it is the operator() of a lambda GCC left nameless
 * (dwlambda.h): the defining function's name (demangled with its
 * parameters), itself perhaps a lambda's, then the closure's part, before
 * fn_strip_params.
 * NULL when fn is not one.
 */
static char *lambda_name(struct symfile *f, Dwarf_Die *fn, int depth)
{
	Dwarf_Die outer, d = *fn, dcu;
	char *suffix = NULL;
	/* an instance names its operator() through its abstract origin or
	 * specification, which -flto puts in another unit: each DIE on the
	 * way is looked up among its own unit's lambdas */
	for (int hop = 0; hop < 4 && !suffix; hop++) {
		dwl_map *m = dwarf_diecu(&d, &dcu, NULL, NULL) ? cu_lambdas(f, &dcu) : NULL;
		if (m)
			suffix = dwl_suffix(m, &d, &outer);
		Dwarf_Attribute a;
		if (!suffix && (!(dwarf_attr(&d, DW_AT_abstract_origin, &a) ||
				  dwarf_attr(&d, DW_AT_specification, &a)) ||
				!dwarf_formref_die(&a, &d)))
			break;
	}
	if (!suffix)
		return NULL;
	const char *link = die_linkage(&outer), *plain = die_name(&outer);
	char *head = NULL;
	if (!link && plain && is_call_operator(plain) && depth < 4)
		head = lambda_name(f, &outer, depth + 1);
	if (!head && link)
		head = fn_demangle_full(link); /* "app::names(int)" */
	if (!head && plain)
		head = strdup(plain);
	char *name = NULL;
	if (!head || asprintf(&name, "%s%s", head, suffix) < 0)
		name = NULL;
	free(head);
	free(suffix);
	return name;
}

static int curange_cmp(const void *a, const void *b)
{
	const struct curange *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every unit's ranges, from the units themselves. */
static void build_curanges(struct symfile *f)
{
	f->curanges_built = true;
	size_t cap = 0;
	Dwarf_Addr bias;
	for (Dwarf_Die *cu = NULL; (cu = dwfl_module_nextcu(f->mod, cu, &bias));) {
		Dwarf_Addr base, lo, hi;
		for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0;) {
			if (ap_cli_grow((void **)&f->curanges, &cap, f->ncuranges + 1,
					sizeof *f->curanges))
				goto done;
			f->curanges[f->ncuranges++] =
				(struct curange){lo + bias, hi + bias, bias, cu};
		}
	}
done:
	if (f->ncuranges) /* a file without DWARF has none, and no array */
		qsort(f->curanges, f->ncuranges, sizeof *f->curanges, curange_cmp);
}

/*
 * The compile unit holding module address a. libdwfl finds it through
 * .debug_aranges, which clang does not write (unless asked to with
 * -mllvm -generate-arange-section); elfutils before 0.189 then finds no
 * unit at all, and such a program would get no file, line or inline
 * frame. The units' own ranges, gathered once, answer instead.
 */
static Dwarf_Die *unit_at(struct symfile *f, Dwarf_Addr a, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(f->mod, a, bias);
	if (cu)
		return cu;
	if (!f->curanges_built)
		build_curanges(f);
	size_t lo = 0, hi = f->ncuranges;
	while (lo < hi) { /* the first range with lo > a */
		size_t mid = lo + (hi - lo) / 2;
		if (f->curanges[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || a >= f->curanges[lo - 1].hi)
		return NULL;
	*bias = f->curanges[lo - 1].bias;
	return f->curanges[lo - 1].cu;
}

/* File offset of module address a (its PT_LOAD segment's), as
 * elf_address undoes; false when no segment holds it. */
static bool file_offset(struct symfile *f, Dwarf_Addr a, uint64_t *off)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(f->mod, &bias);
	size_t nph;
	if (!elf || elf_getphdrnum(elf, &nph))
		return false;
	GElf_Addr v = a - bias;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    v >= ph.p_vaddr && v - ph.p_vaddr < ph.p_filesz) {
			*off = v - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

/* Bytes of a DWARF pointer encoding's value (its low four bits); 0 for
 * one this reader does not take (uleb128, sleb128, omit). */
static size_t eh_enc_size(unsigned enc)
{
	switch (enc & 0x0f) {
	case 0x00: return 8; /* absptr, on this 64-bit target */
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

/*
 * The start of every function with unwind information, from the binary
 * search table of the object's .eh_frame_hdr (its PT_GNU_EH_FRAME
 * segment): sorted pairs of (function start, its entry in .eh_frame),
 * each a signed 32-bit offset from the header when the table's encoding
 * is DW_EH_PE_datarel | DW_EH_PE_sdata4, which GNU ld, gold and lld
 * write; another encoding, or a table that does not fit its segment,
 * gives none. Module addresses, ascending.
 */
static void build_fstarts(struct symfile *f)
{
	f->fstarts_built = true;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(f->mod, &bias);
	size_t nph;
	if (!elf || elf_getphdrnum(elf, &nph))
		return;
	GElf_Phdr ph;
	size_t i;
	for (i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			break;
	/* (A separate debug file, read when the object itself is gone, keeps
	 * the segment with no bytes in the file: p_filesz 0.) */
	if (i == nph || ph.p_filesz < 4)
		return;
	Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
	if (!d || !d->d_buf || d->d_size != ph.p_filesz)
		return;
	const unsigned char *h = d->d_buf;
	size_t len = d->d_size, ptr_size = eh_enc_size(h[1]), count_size = eh_enc_size(h[2]);
	if (h[0] != 1 || h[3] != 0x3b || !ptr_size || (count_size != 4 && count_size != 8) ||
	    4 + ptr_size + count_size > len)
		return;
	uint64_t count = 0;
	memcpy(&count, h + 4 + ptr_size, count_size); /* little-endian host */
	size_t table = 4 + ptr_size + count_size;
	if (count == 0 || count > (len - table) / 8 ||
	    !(f->fstarts = malloc((size_t)count * sizeof *f->fstarts)))
		return;
	for (uint64_t k = 0; k < count; k++) {
		int32_t rel;
		memcpy(&rel, h + table + 8 * k, 4);
		uint64_t start = ph.p_vaddr + (uint64_t)(int64_t)rel + bias;
		if (k && start < f->fstarts[k - 1]) { /* not sorted: not a table */
			free(f->fstarts);
			f->fstarts = NULL;
			return;
		}
		f->fstarts[k] = start;
	}
	f->nfstarts = (size_t)count;
}

/*
 * A name for the function holding module address a when neither a symbol
 * nor debug information names it: a local function of a stripped object
 * (distributions' libraries, release builds of services). Stripping keeps
 * the unwind tables, which say where each function starts: the name is
 * the start of the one holding a, written as an unsymbolized frame's
 * address is, "object+0xFILE_OFFSET". So every call site in one function
 * is one function in by-function reports and flame graphs (the raw
 * address of each call site made each its own), and the offset is what
 * addr2line or a debugger wants once the debug file is found. The
 * function holding a is the last one starting at or before it, when a
 * lies in a function at all: libdw's CFI must have a frame for a (no
 * entry covers code without unwind information, or the gap after a
 * function). NULL (malloc'd otherwise): no function found.
 */
static char *cfi_function_name(struct symfile *f, Dwarf_Addr a)
{
	if (!f->fstarts_built)
		build_fstarts(f);
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = f->nfstarts ? dwfl_module_eh_cfi(f->mod, &bias) : NULL;
	Dwarf_Frame *fr;
	if (!cfi || dwarf_cfi_addrframe(cfi, a - bias, &fr) != 0)
		return NULL;
	free(fr);
	size_t lo = 0, hi = f->nfstarts;
	while (lo < hi) { /* first start > a */
		size_t mid = lo + (hi - lo) / 2;
		if (f->fstarts[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t off;
	if (lo == 0 || !file_offset(f, f->fstarts[lo - 1], &off))
		return NULL;
	const char *base = strrchr(f->path, '/');
	base = base ? base + 1 : f->path;
	char *name;
	if (asprintf(&name, "%s+0x%llx", *base ? base : "?", (unsigned long long)off) < 0)
		return NULL;
	return name;
}

/*
 * Frames at module address a, innermost first; returns how many. The
 * chain of function DIEs at a (dwindex.h) is the innermost function and
 * the functions it was inlined into, each at the call_file/call_line of
 * the instance inside it.
 */
static size_t lookup_frames(struct symfile *f, Dwarf_Addr a, struct rawframe *out)
{
	size_t n = 0, nc = 0;
	int line = 0, col = 0;
	Dwfl_Line *ln = dwfl_module_getsrc(f->mod, a);
	const char *file = ln ? dwfl_lineinfo(ln, NULL, &line, &col, NULL, NULL) : NULL;
	const char *symname = symbol_at(f, a);
	Dwarf_Addr dbias = 0;
	Dwarf_Die *cu = unit_at(f, a, &dbias);
	Dwarf_Line *dl;
	/* no aranges: libdwfl's line lookup fails too; the unit's table */
	if (!ln && cu && (dl = dwarf_getsrc_die(cu, a - dbias))) {
		file = dwarf_linesrc(dl, NULL, NULL);
		if (dwarf_lineno(dl, &line) || dwarf_linecol(dl, &col))
			line = col = 0;
	}
	Dwarf_Die chain[MAX_INLINE];
	if (cu) {
		struct cuinfo *u = cu_info(f, cu);
		dwi_index *ix = u ? u->ix : NULL;
		nc = ix ? dwi_chain(ix, a - dbias, chain, MAX_INLINE)
			: dwi_scopes_chain(cu, a - dbias, chain, MAX_INLINE);
	}
	for (size_t i = 0; i < nc; i++) {
		if (i) { /* the inlined instance inside chain[i] */
			file = call_file(cu, &chain[i - 1]);
			line = attr_int(&chain[i - 1], DW_AT_call_line);
			col = attr_int(&chain[i - 1], DW_AT_call_column);
		}
		bool outer = dwarf_tag(&chain[i]) != DW_TAG_inlined_subroutine;
		const char *link = die_linkage(&chain[i]);
		const char *plain = die_name(&chain[i]);
		/* the outermost function: fall back on the ELF symbol; for
		 * a lambda's operator(), which GCC's DWARF names no further,
		 * prefer it (its C++ symbol says whose lambda it is) */
		if (outer && !link && symname &&
		    (!plain || (is_call_operator(plain) &&
				strncmp(symname, "_Z", 2) == 0)))
			link = symname;
		char *name = NULL;
		if (!link && plain && is_call_operator(plain) &&
		    (name = lambda_name(f, &chain[i], 0)))
			fn_strip_params(name); /* as fn_demangle does */
		out[n] = (struct rawframe){name ? name : display_name(link, plain), link,
					   file, line, col};
		if (!out[n].name)
			break;
		n++;
	}
	if (n == 0 && symname) {
		out[0] = (struct rawframe){display_name(symname, NULL), symname,
					   file, line, col};
		n = out[0].name ? 1 : 0;
	}
	char *cfi;
	if (n == 0 && (cfi = cfi_function_name(f, a))) {
		out[0] = (struct rawframe){cfi, NULL, file, line, col};
		n = 1;
	}
	return n;
}

/* ELF virtual address of a profile address, through its mapping. */
static bool elf_address(struct symfile *f, const ap_mapping *m, uint64_t addr,
			GElf_Addr *out)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(f->mod, &bias);
	size_t nph;
	if (!elf || elf_getphdrnum(elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (m->file_offset < ph.p_offset ||
		    m->file_offset >= ph.p_offset + (ph.p_filesz ? ph.p_filesz : 1))
			continue;
		GElf_Addr start_vaddr = ph.p_vaddr + (m->file_offset - ph.p_offset);
		*out = addr - m->memory_start + start_vaddr + bias;
		return true;
	}
	return false;
}

static int add_result(struct symctx *c, struct rawframe *rf, size_t n)
{
	if (c->nres == c->capres) {
		size_t cap = c->capres ? 2 * c->capres : 256;
		struct symres *nr = realloc(c->res, cap * sizeof *nr);
		if (!nr)
			return AP_ENOMEM;
		c->res = nr;
		c->capres = cap;
	}
	while (c->nlines + n > c->caplines) {
		size_t cap = c->caplines ? 2 * c->caplines : 1024;
		hv_sym_line *nl = realloc(c->lines, cap * sizeof *nl);
		if (!nl)
			return AP_ENOMEM;
		c->lines = nl;
		c->caplines = cap;
	}
	c->res[c->nres++] = (struct symres){c->nlines, n};
	return 0;
}

/* Look up (file, ELF address) once; index of the cached result. */
static int resolve(struct symctx *c, struct symfile *f, size_t fi,
		   GElf_Addr a, size_t *ri)
{
	uint64_t key[2] = {fi, a};
	*ri = hv_keymap_get(c->cache, key, sizeof key);
	if (*ri != SIZE_MAX)
		return 0;
	struct rawframe rf[MAX_INLINE];
	size_t n = lookup_frames(f, a, rf);
	int rc = add_result(c, rf, n);
	for (size_t i = 0; i < n; i++) {
		if (!rc) {
			hv_sym_line *l = &c->lines[c->nlines++];
			l->name = keep(c, rf[i].name);
			l->system_name = keep(c, rf[i].sysname);
			l->file = keep(c, rf[i].file);
			l->line = rf[i].line;
			l->column = rf[i].col;
		}
		free(rf[i].name);
	}
	if (rc || c->oom)
		return AP_ENOMEM;
	*ri = c->nres - 1;
	c->st.addresses++;
	c->st.resolved += n > 0;
	return hv_keymap_put(c->cache, key, sizeof key, *ri);
}

static double elapsed(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static void progress(struct symctx *c)
{
	c->done_locs++;
	if (!c->o->progress || (c->done_locs & 255) || !isatty(2))
		return;
	if (elapsed(&c->t0) > 1.0) {
		fprintf(stderr, "\rallocprof: symbolizing %zu/%zu locations", c->done_locs,
			c->total_locs);
		c->progress_shown = true;
	}
}

/* The symbolizable file behind a mapping, or NULL. */
static struct symfile *mapping_file(struct symctx *c, const ap_profile *in,
				    const ap_mapping *m, size_t *fi)
{
	const char *path = ap_profile_string(in, m->filename);
	if (m->has_functions || !*path || path[0] == '[')
		return NULL;
	struct symfile *f = file_for(c, path, ap_profile_string(in, m->build_id));
	if (!f) {
		c->oom = true;
		return NULL;
	}
	*fi = (size_t)(f - c->files);
	return f->usable ? f : NULL;
}

static int on_location(void *ctx, const ap_profile *in, const ap_location *l,
		       const hv_sym_line **lines, size_t *n)
{
	struct symctx *c = ctx;
	size_t fi, ri;
	GElf_Addr a;
	*lines = NULL;
	*n = 0;
	progress(c);
	if (l->nlines || !l->mapping_id)
		return c->fail;
	const ap_mapping *m = ap_profile_mapping(in, l->mapping_id);
	struct symfile *f = m ? mapping_file(c, in, m, &fi) : NULL;
	if (c->fail || c->oom)
		return c->fail ? c->fail : AP_ENOMEM;
	if (!f || !elf_address(f, m, l->address, &a))
		return 0;
	int rc = resolve(c, f, fi, a, &ri);
	if (rc)
		return rc;
	const struct symres *r = &c->res[ri];
	if (r->n == 0)
		return 0;
	memcpy(c->cur, c->lines + r->first, r->n * sizeof *c->cur);
	*lines = c->cur;
	*n = r->n;
	return 0;
}

static void on_mapping(void *ctx, const ap_profile *in, ap_mapping *m)
{
	struct symctx *c = ctx;
	size_t fi;
	if (c->fail || m->has_functions || !mapping_file(c, in, m, &fi))
		return;
	m->has_functions = m->has_filenames = m->has_line_numbers = true;
	m->has_inline_frames = true;
}

int sym_symbolize_profile(const ap_profile *in, const sym_options *o,
			  ap_profile **out, sym_stats *stats, char *err,
			  size_t errlen)
{
	static char dummy[1];
	struct symctx c = {.o = o, .err = err ? err : dummy,
			   .errlen = err ? errlen : sizeof dummy};
	*out = NULL;
	c.filemap = hv_keymap_new();
	c.cache = hv_keymap_new();
	int prc = hv_strpool_init(&c.strs);
	clock_gettime(CLOCK_MONOTONIC, &c.t0);
	c.total_locs = in->nlocations;
	for (size_t i = 0; i < in->nmappings; i++) {
		/* the program itself: the first mapping with a real file */
		const char *p = ap_profile_string(in, in->mappings[i].filename);
		if (*p && p[0] != '[') {
			if (!in->mappings[i].has_functions)
				c.main_path = p;
			break;
		}
	}
	int rc = AP_ENOMEM;
	if (c.filemap && c.cache && !prc) {
		hv_rewrite rw = {on_location, on_mapping, &c};
		ap_profile *const one[1] = {(ap_profile *)in};
		rc = hv_profile_merge_ex(one, 1, &rw, out, err, errlen);
		if (c.fail)
			rc = c.fail; /* err already says why */
	}
	if (c.progress_shown)
		fputs("\r\033[K", stderr);
	if (stats)
		*stats = c.st;
	for (size_t i = 0; i < c.nfiles; i++) {
		if (c.files[i].dwfl)
			dwfl_end(c.files[i].dwfl);
		free(c.files[i].syms);
		free(c.files[i].fstarts);
		free(c.files[i].curanges);
		for (size_t j = 0; j < c.files[i].ncus; j++) {
			dwi_free(c.files[i].cus[j].ix);
			dwl_free(c.files[i].cus[j].lams);
		}
		free(c.files[i].cus);
		hv_keymap_free(c.files[i].cumap);
		free(c.files[i].path);
		free(c.files[i].build_id);
		free(c.files[i].debuginfo_path);
	}
	free(c.files);
	hv_strpool_free(&c.strs);
	free(c.res);
	free(c.lines);
	hv_keymap_free(c.filemap);
	hv_keymap_free(c.cache);
	if (rc && *out) {
		ap_profile_destroy(*out);
		*out = NULL;
	}
	return rc;
}
