/*
 * elfdyn.h: what `allocprof attach` needs from ELF files on disk (libelf):
 * a dynamic symbol's address relative to the object's load base, and the
 * machine a file was built for; and for `allocprof run`, whether a program
 * is linked dynamically at all.
 */
#ifndef ALLOCPROF_CLI_ELFDYN_H
#define ALLOCPROF_CLI_ELFDYN_H

#include <stdint.h>

/*
 * The address of defined function `name` in path's .dynsym, relative to
 * where the loader puts the file's first byte (st_value minus the first
 * PT_LOAD's page-aligned p_vaddr). 0, AP_ENOTFOUND (no such symbol), or
 * AP_EIO / AP_ECORRUPT (unreadable, not ELF).
 */
int elfdyn_lookup(const char *path, const char *name, uint64_t *offset);

/* e_machine of path (EM_X86_64...), or a negative AP_E* code. */
int elfdyn_machine(const char *path);

/* Whether path names a dynamic loader (PT_INTERP): 1 or 0, or a negative
 * AP_E* code (unreadable, not ELF). A statically linked program has none,
 * and nothing LD_PRELOAD names is ever loaded into it. */
int elfdyn_has_interp(const char *path);

/* Whether path was linked by Go's linker (a ".note.go.buildid" section):
 * 1 or 0, or a negative AP_E* code. */
int elfdyn_is_go(const char *path);

#endif
