/*
 * dwindex.h: the functions of one DWARF compile unit by address, for the
 * symbolizer's inline chains (symbolize.c).
 *
 * libdw's dwarf_getscopes and dwarf_getscopes_die walk the compile unit
 * (CU) from its start on every call: on DWARF-rich C++ (thousands of
 * inlined instances among the types of the standard library) that was
 * about 20 ms an address. dwi_build walks the CU once and records every
 * function DIE with code (DW_TAG_subprogram, DW_TAG_inlined_subroutine,
 * DW_TAG_entry_point): its address ranges and its nearest enclosing
 * function DIE; dwi_chain then answers an address by binary search.
 *
 * A chain is what the symbolizer shows for one address: the innermost
 * function DIE whose ranges hold it, then each function it was inlined
 * into (its physical parents in the DIE tree), up to and including the
 * first one that is not an inlined instance. dwi_scopes_chain builds the
 * same chain with libdw's scope walk; it is the fallback when dwi_build
 * fails (bad DWARF, out of memory) and the reference the tests compare
 * the index with.
 */
#ifndef ALLOCPROF_CLI_DWINDEX_H
#define ALLOCPROF_CLI_DWINDEX_H

#include <elfutils/libdw.h>
#include <stddef.h>

typedef struct dwi_index dwi_index;

/*
 * The index of the CU whose DIE is cu, or NULL when the walk fails (a DIE
 * libdw cannot read, no memory). Its DIEs are copies, valid while the
 * Dwarf (or the Dwfl that owns it) lives.
 */
dwi_index *dwi_build(Dwarf_Die *cu);
void dwi_free(dwi_index *ix);

/* Function DIEs and address ranges recorded (for tests and statistics). */
size_t dwi_functions(const dwi_index *ix);
size_t dwi_ranges(const dwi_index *ix);

/*
 * The chain at pc (an address of the CU's own, without the module's bias),
 * innermost function first, at most max DIEs; returns how many (0: no
 * function of the CU holds pc).
 */
size_t dwi_chain(const dwi_index *ix, Dwarf_Addr pc, Dwarf_Die *out,
		 size_t max);

/* The same chain by dwarf_getscopes and dwarf_getscopes_die (slow). */
size_t dwi_scopes_chain(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out,
			size_t max);

#endif
