/*
 * dwindex_test.c: the per-CU function index (src/cli/dwindex.c) against
 * libdw's own scope walk, on this test program's DWARF (libdwfl reports
 * the running process). Checks: a function inlined two levels deep (and
 * beside a sibling instance of itself) gives the three-frame chain,
 * innermost first, with the call lines of each instance; an inline
 * function that is nothing but another (two instances with equal ranges)
 * gives the inner one first; at every byte of this file's compile unit
 * (where a GCC nested function's DIE lies inside another function's DIE,
 * its code elsewhere), and at the line-table addresses (and the byte
 * before each) of every other unit of the program, the index gives the
 * same chain of DIEs as dwarf_getscopes + dwarf_getscopes_die, so an index
 * that answered with an outer function, or a sibling, would fail here.
 * AP_TEST_OWN_FRAMES: built with debug information and real frames in any
 * build type (tests/CMakeLists.txt); always_inline inlines at -O1 too.
 */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aptest.h"
#include "dwindex.h"

#define MAXCHAIN 64

static int line_leaf, line_first_call, line_leaf_call, line_mid_call;
static volatile int calls; /* so that the two calls in mid stay two */

__attribute__((noinline)) static uint64_t caller_pc(void)
{
	calls++;
	return (uint64_t)(uintptr_t)__builtin_return_address(0) - 1;
}

static inline __attribute__((always_inline)) uint64_t leaf(void)
{
	uint64_t pc = caller_pc(); line_leaf = __LINE__;
	return pc;
}

static inline __attribute__((always_inline)) uint64_t mid(uint64_t *first)
{
	*first = leaf(); line_first_call = __LINE__;
	uint64_t pc = leaf(); line_leaf_call = __LINE__;
	return pc;
}

__attribute__((noinline)) static uint64_t outer(uint64_t *first)
{
	uint64_t pc = mid(first); line_mid_call = __LINE__;
	return pc;
}

/* An inline function that is nothing but another: the same ranges twice. */
static inline __attribute__((always_inline)) uint64_t wrap(void)
{
	return leaf();
}

__attribute__((noinline)) static uint64_t outer_of_wrap(void)
{
	uint64_t pc = wrap();
	calls++;
	return pc;
}

#if defined(__GNUC__) && !defined(__clang__)
/*
 * A GCC nested function: its DIE lies inside outer_of_nested's, its code
 * outside that function's ranges, as GCC does with a C++ lambda's
 * operator(). libdw's scope walk never finds it there; nor may the index.
 */
__attribute__((noinline)) static uint64_t outer_of_nested(void)
{
	__attribute__((noinline)) uint64_t nested(void)
	{
		calls++;
		return caller_pc();
	}
	return nested() + (uint64_t)calls;
}
#else
static uint64_t outer_of_nested(void)
{
	return 0;
}
#endif

/* This process, as libdwfl sees it; NULL when it cannot. */
static Dwfl *self_dwfl(void)
{
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
	};
	Dwfl *d = dwfl_begin(&cb);
	if (!d)
		return NULL;
	dwfl_report_begin(d);
	if (dwfl_linux_proc_report(d, getpid()) || dwfl_report_end(d, NULL, NULL)) {
		dwfl_end(d);
		return NULL;
	}
	return d;
}

/* The process's Dwfl and the index of the compile unit holding pc. */
struct unit {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Die *cu;
	Dwarf_Addr bias;
	dwi_index *ix;
};

static bool open_unit(struct unit *u, uint64_t pc)
{
	memset(u, 0, sizeof *u);
	u->dwfl = self_dwfl();
	u->mod = u->dwfl ? dwfl_addrmodule(u->dwfl, pc) : NULL;
	u->cu = u->mod ? dwfl_module_addrdie(u->mod, pc, &u->bias) : NULL;
	u->ix = u->cu ? dwi_build(u->cu) : NULL;
	return u->ix;
}

static void close_unit(struct unit *u)
{
	dwi_free(u->ix);
	if (u->dwfl)
		dwfl_end(u->dwfl);
}

static int attr_int(Dwarf_Die *d, int name)
{
	Dwarf_Attribute a;
	Dwarf_Word v;
	return dwarf_attr(d, name, &a) && !dwarf_formudata(&a, &v) ? (int)v : 0;
}

static const char *die_name(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	const char *s = dwarf_attr_integrate(d, DW_AT_name, &a) ? dwarf_formstring(&a) : NULL;
	return s ? s : "?";
}

/* "name@offset name@offset ..." of a chain, for messages. */
static const char *describe(Dwarf_Die *c, size_t n, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%s@%#llx", i ? " " : "",
					 die_name(&c[i]),
					 (unsigned long long)dwarf_dieoffset(&c[i]));
	return buf;
}

/*
 * The chain at the process address pc into c (MAXCHAIN DIEs); whether it
 * is the three functions named, innermost first. why gets the chain.
 */
static bool chain_named(const struct unit *u, uint64_t pc, Dwarf_Die *c,
			const char *const names[3], char *why, size_t cap)
{
	size_t n = dwi_chain(u->ix, pc - u->bias, c, MAXCHAIN);
	describe(c, n, why, cap);
	for (size_t i = 0; n == 3 && i < n; i++)
		if (strcmp(die_name(&c[i]), names[i]))
			return false;
	return n == 3;
}

struct tally {
	size_t addrs, inlined, deep, differ;
	char first_diff[512];
};

/* Compare the index with libdw's scope walk at pc; counts in *t. */
static void compare_at(const dwi_index *ix, Dwarf_Die *cu, Dwarf_Addr pc,
		       struct tally *t)
{
	Dwarf_Die a[MAXCHAIN], b[MAXCHAIN];
	size_t na = dwi_chain(ix, pc, a, MAXCHAIN);
	size_t nb = dwi_scopes_chain(cu, pc, b, MAXCHAIN);
	bool same = na == nb;
	for (size_t i = 0; same && i < na; i++)
		same = a[i].addr == b[i].addr;
	t->addrs++;
	t->inlined += nb >= 2;
	t->deep += nb >= 3;
	if (!same && !t->differ++) {
		char da[200], db[200];
		snprintf(t->first_diff, sizeof t->first_diff,
			 "at %#llx: index [%s], scope walk [%s]", (unsigned long long)pc,
			 describe(a, na, da, sizeof da), describe(b, nb, db, sizeof db));
	}
}

/* Prints what was compared; whether the two agreed everywhere and met a
 * function inlined two deep. */
static bool tally_ok(const char *what, size_t fns, const struct tally *t)
{
	printf("%s: %zu functions; %zu addresses, %zu inlined, %zu two deep\n", what,
	       fns, t->addrs, t->inlined, t->deep);
	if (t->differ)
		printf("%zu addresses differ; first %s\n", t->differ, t->first_diff);
	return !t->differ && t->deep > 0;
}

AP_TEST(inlined_two_deep_is_a_three_frame_chain)
{
	uint64_t first, pc = outer(&first);
	struct unit u;
	AP_CHECK_MSG(open_unit(&u, pc), "no DWARF index here: %s", dwfl_errmsg(-1));
	Dwarf_Die c[MAXCHAIN];
	char why[256];
	static const char *const names[3] = {"leaf", "mid", "outer"};
	AP_CHECK_MSG(chain_named(&u, pc, c, names, why, sizeof why), "chain: %s", why);
	AP_CHECK_EQ_INT(dwarf_tag(&c[0]), DW_TAG_inlined_subroutine);
	AP_CHECK_EQ_INT(dwarf_tag(&c[1]), DW_TAG_inlined_subroutine);
	AP_CHECK_EQ_INT(dwarf_tag(&c[2]), DW_TAG_subprogram);
	/* each instance's call line is the line in the function around it */
	AP_CHECK_EQ_INT(attr_int(&c[0], DW_AT_call_line), line_leaf_call);
	AP_CHECK_EQ_INT(attr_int(&c[1], DW_AT_call_line), line_mid_call);
	/* the other instance of leaf in mid, not the one above */
	Dwarf_Die f[MAXCHAIN];
	AP_CHECK_EQ_INT(dwi_chain(u.ix, first - u.bias, f, MAXCHAIN), 3);
	AP_CHECK_EQ_INT(attr_int(&f[0], DW_AT_call_line), line_first_call);
	AP_CHECK(f[1].addr == c[1].addr && f[2].addr == c[2].addr);
	AP_CHECK(line_leaf > 0);
	close_unit(&u);
}

AP_TEST(equal_ranges_give_the_innermost_first)
{
	uint64_t pc = outer_of_wrap();
	struct unit u;
	AP_CHECK(open_unit(&u, pc));
	Dwarf_Die c[MAXCHAIN];
	char why[256];
	static const char *const names[3] = {"leaf", "wrap", "outer_of_wrap"};
	AP_CHECK_MSG(chain_named(&u, pc, c, names, why, sizeof why), "chain: %s", why);
	/* wrap's instance has no code but leaf's: the same ranges */
	Dwarf_Addr lo0, hi0, lo1, hi1, base;
	AP_CHECK(dwarf_ranges(&c[0], 0, &base, &lo0, &hi0) > 0 &&
		 dwarf_ranges(&c[1], 0, &base, &lo1, &hi1) > 0);
	if (lo0 != lo1 || hi0 != hi1)
		printf("note: this compiler gave wrap's instance code of its own\n");
	close_unit(&u);
}

/*
 * The index against libdw's scope walk: at every byte of this file's unit,
 * then at line-table addresses (and the byte before each) of every unit of
 * the program.
 */
AP_TEST(the_index_matches_the_scope_walk)
{
	uint64_t first;
	struct unit u;
	AP_CHECK(open_unit(&u, outer(&first)) && outer_of_nested());
	struct tally t = {0};
	Dwarf_Addr base, lo, hi;
	for (ptrdiff_t off = 0; (off = dwarf_ranges(u.cu, off, &base, &lo, &hi)) > 0;)
		for (Dwarf_Addr a = lo; a < hi; a++)
			compare_at(u.ix, u.cu, a, &t);
	AP_CHECK(dwi_ranges(u.ix) >= dwi_functions(u.ix));
	AP_CHECK(tally_ok("this unit", dwi_functions(u.ix), &t));
	struct tally all = {0};
	size_t units = 0, fns = 0;
	Dwarf_Addr bias;
	for (Dwarf_Die *cu = NULL; (cu = dwfl_module_nextcu(u.mod, cu, &bias));) {
		Dwarf_Lines *lines;
		size_t nlines;
		if (dwarf_getsrclines(cu, &lines, &nlines) || !nlines)
			continue;
		dwi_index *ix = dwi_build(cu);
		AP_CHECK_MSG(ix, "unit %s: no index", die_name(cu));
		units++;
		fns += dwi_functions(ix);
		/* at most 200 rows a unit keeps the scope walk's cost bounded */
		size_t step = nlines / 200 + 1;
		for (size_t i = 0; i < nlines; i += step) {
			Dwarf_Addr a;
			if (dwarf_lineaddr(dwarf_onesrcline(lines, i), &a))
				continue;
			compare_at(ix, cu, a, &all);
			compare_at(ix, cu, a - 1, &all);
		}
		dwi_free(ix);
	}
	printf("%zu units\n", units);
	AP_CHECK(tally_ok("every unit", fns, &all));
	close_unit(&u);
}
