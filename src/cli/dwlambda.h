/*
 * dwlambda.h: names for the lambdas GCC's DWARF leaves nameless, for the
 * symbolizer (symbolize.c).
 *
 * GCC writes the operator() of a lambda's closure type with DW_AT_name
 * "operator()" and no linkage name, inside an anonymous structure inside
 * the function that defines the lambda. An out-of-line operator() has an
 * ELF symbol, which demangles to its full name
 * (app::names(int)::{lambda(int)#1}::operator()(int) const); an inlined
 * one has nothing else, so every inlined lambda of a program was the same
 * function, "operator()", and a report by function summed them all in one
 * row. dwl_suffix rebuilds the demangler's name from the DWARF: the
 * enclosing function, the lambda's parameter types, and its number, which
 * the Itanium C++ ABI counts among the closures of the same signature in
 * the same function, in source order (GCC before 13: among all the
 * function's closures, whatever their signature; the unit's
 * DW_AT_producer says which GCC wrote it).
 *
 * Parameter types are printed from their DWARF names (a class by its own
 * name, without its namespaces), so a full name may differ from the
 * demangler's in its parameter lists; the shortened names reports show
 * drop those lists and agree.
 */
#ifndef ALLOCPROF_CLI_DWLAMBDA_H
#define ALLOCPROF_CLI_DWLAMBDA_H

#include <elfutils/libdw.h>

typedef struct dwl_map dwl_map;

/*
 * The lambdas of the compile unit whose DIE is cu: each closure type's
 * operator() with its enclosing function, signature and number. NULL when
 * the walk fails (a DIE libdw cannot read, no memory). Its DIEs are
 * copies, valid while the Dwarf lives.
 */
dwl_map *dwl_build(Dwarf_Die *cu);
void dwl_free(dwl_map *m);

/*
 * If fn, a DIE of the unit, is the operator() of one of its lambdas (as
 * written in the closure type: an inlined or out-of-line instance leads
 * there through DW_AT_abstract_origin or DW_AT_specification, perhaps
 * into another unit, as -flto's do): the DIE of the function that defines
 * the lambda in *outer, and "::{lambda(SIG)#N}::operator()(SIG)[ const]"
 * (the part after the outer function's name) as a malloc'd string. NULL
 * otherwise, or without memory.
 */
char *dwl_suffix(const dwl_map *m, Dwarf_Die *fn, Dwarf_Die *outer);

#endif
