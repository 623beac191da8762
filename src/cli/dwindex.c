/*
 * dwindex.c: the functions of one DWARF compile unit by address (see
 * dwindex.h).
 *
 * The walk visits the DIEs that can hold code: the CU's children and the
 * children of namespaces, modules, classes and structures (a compiler may
 * define member functions inside them), of lexical, try and catch blocks
 * and of functions with code. A DW_TAG_imported_unit (the partial units of
 * dwz-compressed files) stands for the children of the unit it imports, as
 * in libdw's own scope walk; each unit is walked once per CU, which also
 * ends import cycles. Other subtrees (types, variables, parameters) are
 * stepped over by dwarf_siblingof, which jumps by DW_AT_sibling where the
 * compiler wrote one. Functions without code (declarations, abstract
 * instances of inline functions) are not descended: libdw's scope walk
 * prunes every DIE that does not hold the address, so it never finds
 * anything inside them either. For the same reason a function's ranges
 * are clipped to those of the function around it: GCC puts the out-of-line
 * operator() of a lambda inside the DIE of the function that defines it,
 * with code outside that function's ranges, where libdw does not find it
 * (and the symbolizer names it by its ELF symbol, which unlike the DWARF
 * says whose lambda it is: main::{lambda()#1}::operator()).
 *
 * The walk is iterative (a stack of levels, one per DIE being descended)
 * so that deeply nested DWARF, corrupt or not, cannot overflow the stack.
 *
 * Ranges of functions nest: an inlined instance lies inside the function
 * it was inlined into (clipped to it, if the DWARF says otherwise), and
 * the functions of a CU are disjoint. Sorted by start, then by end
 * descending, every range that holds a given range comes before it; each
 * range keeps the nearest one ("up"). The innermost range holding an
 * address a is then the last range starting at or before a, or one of the
 * ranges around it: a binary search and a few steps up. On DWARF whose
 * ranges overlap without nesting the answer may be an outer function or
 * none, never a crash.
 */
#include "dwindex.h"

#include <dwarf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

#define NONE UINT32_MAX

struct fn {
	Dwarf_Die die;
	uint32_t parent; /* the nearest function around it in the DIE tree */
};

struct range {
	Dwarf_Addr lo, hi; /* [lo, hi) */
	uint32_t fn;
	uint32_t up; /* the nearest range before this one that holds it */
};

struct dwi_index {
	struct fn *fns;       /* in DIE tree preorder: parents first */
	struct range *ranges; /* by lo, then hi descending, then fn */
	uint32_t nfns, nranges;
};

/*
 * The function around a DIE: its entry, or NONE at the unit's top, and
 * its ranges, ix->ranges[first .. first + n), sorted.
 */
struct around {
	uint32_t fn, first, n;
};

/* A level of the walk: the children of one DIE. */
struct level {
	Dwarf_Die next; /* the next DIE to visit here */
	struct around in;
	bool done; /* no next DIE: the level is over */
};

struct walk {
	dwi_index *ix;
	size_t capfns, capranges;
	struct level *lv;
	size_t nlv, caplv;
	void **units; /* imported units walked already */
	size_t nunits, capunits;
};

/* Visit the children of die next, inside function in; false on error. */
static bool descend(struct walk *w, Dwarf_Die *die, struct around in)
{
	Dwarf_Die kid;
	int r = dwarf_child(die, &kid);
	if (r)
		return r > 0; /* no children */
	if (ap_cli_grow((void **)&w->lv, &w->caplv, w->nlv + 1, sizeof *w->lv))
		return false;
	w->lv[w->nlv++] = (struct level){kid, in, false};
	return true;
}

/* DW_TAG_imported_unit: the children of the unit it names, in its place. */
static bool import(struct walk *w, Dwarf_Die *die, struct around in)
{
	Dwarf_Attribute a;
	Dwarf_Die unit;
	if (!dwarf_attr(die, DW_AT_import, &a) || !dwarf_formref_die(&a, &unit))
		return true; /* libdw's walk skips it too */
	for (size_t i = 0; i < w->nunits; i++)
		if (w->units[i] == unit.addr)
			return true;
	if (ap_cli_grow((void **)&w->units, &w->capunits, w->nunits + 1, sizeof *w->units))
		return false;
	w->units[w->nunits++] = unit.addr;
	return descend(w, &unit, in);
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1;
	/* equal ranges (a function inlined as the whole of another): the
	 * outer function first, so that the innermost is the last; fns are
	 * numbered parents first */
	return (x->fn > y->fn) - (x->fn < y->fn);
}

static bool push_range(struct walk *w, Dwarf_Addr lo, Dwarf_Addr hi, uint32_t fn)
{
	dwi_index *ix = w->ix;
	if (ix->nranges == NONE ||
	    ap_cli_grow((void **)&ix->ranges, &w->capranges, ix->nranges + 1, sizeof *ix->ranges))
		return false;
	ix->ranges[ix->nranges++] = (struct range){lo, hi, fn, NONE};
	return true;
}

/* [lo, hi) of function fn, as much of it as lies in the function around. */
static bool add_range(struct walk *w, Dwarf_Addr lo, Dwarf_Addr hi, uint32_t fn,
		      struct around in)
{
	if (in.fn == NONE)
		return push_range(w, lo, hi, fn);
	/* the ranges around are sorted and disjoint: from the first that
	 * ends after lo to the last that starts before hi */
	uint32_t a = in.first, b = in.first + in.n;
	while (a < b) {
		uint32_t mid = a + (b - a) / 2;
		if (w->ix->ranges[mid].hi <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	for (uint32_t i = a; i < in.first + in.n; i++) {
		const struct range *r = &w->ix->ranges[i]; /* push_range moves it */
		if (r->lo >= hi)
			break;
		Dwarf_Addr l = r->lo > lo ? r->lo : lo, h = r->hi < hi ? r->hi : hi;
		if (l < h && !push_range(w, l, h, fn))
			return false;
	}
	return true;
}

/* A function DIE inside function in: recorded if it has code. */
static bool function(struct walk *w, Dwarf_Die *die, struct around in)
{
	dwi_index *ix = w->ix;
	uint32_t first = ix->nranges, fn = ix->nfns;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	if (fn == NONE)
		return false;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		if (lo < hi && !add_range(w, lo, hi, fn, in))
			return false;
	if (off < 0)
		return false;
	uint32_t n = ix->nranges - first;
	if (!n)
		return true;
	qsort(ix->ranges + first, n, sizeof *ix->ranges, range_cmp);
	if (ap_cli_grow((void **)&ix->fns, &w->capfns, fn + 1, sizeof *ix->fns))
		return false;
	ix->fns[ix->nfns++] = (struct fn){*die, in.fn};
	return descend(w, die, (struct around){fn, first, n});
}

static bool visit(struct walk *w, Dwarf_Die *die, struct around in)
{
	switch (dwarf_tag(die)) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_entry_point:
		return function(w, die, in);
	case DW_TAG_imported_unit:
		return import(w, die, in);
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_with_stmt:
		return descend(w, die, in);
	default:
		return true;
	}
}

static bool walk_cu(struct walk *w, Dwarf_Die *cu)
{
	if (!descend(w, cu, (struct around){NONE, 0, 0}))
		return false;
	while (w->nlv) {
		struct level *l = &w->lv[w->nlv - 1];
		if (l->done) {
			w->nlv--;
			continue;
		}
		Dwarf_Die die = l->next;
		struct around in = l->in;
		int r = dwarf_siblingof(&die, &l->next);
		/* a DW_AT_sibling that points back would loop forever */
		if (r < 0 || (r == 0 && dwarf_dieoffset(&l->next) <= dwarf_dieoffset(&die)))
			return false;
		l->done = r > 0;
		if (!visit(w, &die, in)) /* may move w->lv */
			return false;
	}
	return true;
}

static void link_ranges(dwi_index *ix)
{
	struct range *r = ix->ranges;
	qsort(r, ix->nranges, sizeof *r, range_cmp);
	for (uint32_t i = 0; i < ix->nranges; i++) {
		/* the ranges around i are those around i - 1 (and i - 1
		 * itself) that end at or after i's end; skipping the others
		 * for good keeps this linear, as a stack would */
		uint32_t p = i ? i - 1 : NONE;
		while (p != NONE && r[p].hi < r[i].hi)
			p = r[p].up;
		r[i].up = p;
	}
}

dwi_index *dwi_build(Dwarf_Die *cu)
{
	dwi_index *ix = calloc(1, sizeof *ix);
	struct walk w = {.ix = ix};
	bool ok = ix && walk_cu(&w, cu);
	free(w.lv);
	free(w.units);
	if (!ok) {
		dwi_free(ix);
		return NULL;
	}
	link_ranges(ix);
	/* give back the doubling's slack: a big C++ CU has 100k+ functions */
	struct fn *f = ix->nfns ? realloc(ix->fns, ix->nfns * sizeof *f) : NULL;
	struct range *r = ix->nranges ? realloc(ix->ranges, ix->nranges * sizeof *r) : NULL;
	if (f)
		ix->fns = f;
	if (r)
		ix->ranges = r;
	return ix;
}

void dwi_free(dwi_index *ix)
{
	if (!ix)
		return;
	free(ix->fns);
	free(ix->ranges);
	free(ix);
}

size_t dwi_functions(const dwi_index *ix)
{
	return ix->nfns;
}

size_t dwi_ranges(const dwi_index *ix)
{
	return ix->nranges;
}

size_t dwi_chain(const dwi_index *ix, Dwarf_Addr pc, Dwarf_Die *out, size_t max)
{
	const struct range *r = ix->ranges;
	uint32_t lo = 0, hi = ix->nranges;
	while (lo < hi) { /* first range starting after pc */
		uint32_t mid = lo + (hi - lo) / 2;
		if (r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t i = lo ? lo - 1 : NONE;
	while (i != NONE && r[i].hi <= pc)
		i = r[i].up;
	size_t n = 0;
	for (uint32_t f = i != NONE ? r[i].fn : NONE; f != NONE && n < max;
	     f = ix->fns[f].parent) {
		out[n] = ix->fns[f].die;
		if (dwarf_tag(&out[n++]) != DW_TAG_inlined_subroutine)
			break;
	}
	return n;
}

static bool is_function(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/*
 * dwarf_getscopes gives the innermost function scope at pc; when that is
 * an inlined instance, the scopes it returns past it are those of the
 * inline function's abstract definition, so its physical containers, the
 * functions it was inlined into, come from dwarf_getscopes_die.
 */
size_t dwi_scopes_chain(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out, size_t max)
{
	Dwarf_Die *scopes = NULL, *chain = NULL;
	int ns = dwarf_getscopes(cu, pc, &scopes), nc = 0;
	int first = 0;
	bool own_chain = false;
	while (first < ns && !is_function(&scopes[first]))
		first++;
	if (first < ns && dwarf_tag(&scopes[first]) == DW_TAG_inlined_subroutine) {
		nc = dwarf_getscopes_die(&scopes[first], &chain);
		own_chain = true;
	} else if (first < ns) {
		nc = 1;
		chain = &scopes[first];
	}
	size_t n = 0;
	for (int i = 0; i < nc && n < max; i++) {
		if (!is_function(&chain[i]))
			continue;
		out[n] = chain[i];
		if (dwarf_tag(&out[n++]) != DW_TAG_inlined_subroutine)
			break;
	}
	if (own_chain)
		free(chain);
	free(scopes);
	return n;
}
