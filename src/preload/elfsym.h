/*
 * elfsym.h: function names from an ELF object's symbol tables, read from
 * its file, for the runtime's symbol service (/debug/pprof/symbol).
 *
 * The runtime cannot use libelf or libdw (they call malloc, and the
 * runtime never does), so this is a small reader of its own: the ELF
 * header, program headers (to turn a mapping's file offset into virtual
 * addresses, and for the build ID note), section headers (to find .symtab
 * or .dynsym and the string table each links to) and the symbols
 * themselves, streamed through a caller's buffer. Every offset and count
 * read from the file is checked against the file's size before use, so a
 * truncated or hostile file gives AP_ECORRUPT, never a read out of bounds
 * (tests/fuzz/preload_elfsym_fuzz.c). Only the process's own class and
 * byte order are read (the objects it has loaded). Memory: none beyond
 * the caller's query array and buffer.
 */
#ifndef AP_PRELOAD_ELFSYM_H
#define AP_PRELOAD_ELFSYM_H

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

typedef struct elfsym_file {
	/* Read n bytes at off into buf: 0 when all n were read, else -1. */
	int (*read)(void *ctx, uint64_t off, void *buf, size_t n);
	void *ctx;
	uint64_t size; /* the file's size: every read is checked against it */
	ElfW(Ehdr) eh; /* filled by elfsym_open */
	uint64_t shnum; /* section count (extended numbering resolved) */
} elfsym_file;

/* One address to name. elfsym_lookup fills the out fields when it finds
 * a better symbol than the one already there (start with them zeroed). */
typedef struct elfsym_query {
	uint64_t vaddr;    /* in: address in the object's p_vaddr terms */
	uint64_t name_off; /* out: file offset of the name; 0 = none yet */
	uint64_t name_max; /* out: bytes from name_off to its table's end */
	uint64_t start;    /* out: the symbol's value */
	unsigned rank;     /* out: 1 + binding, +4 when the symbol has a size */
	size_t tag;        /* the caller's (kept as is) */
} elfsym_query;

/* Read and check the ELF header (native class and byte order). 0 or
 * AP_ECORRUPT. f->read, ctx and size must be set. */
int elfsym_open(elfsym_file *f);

/* The p_vaddr of the PT_LOAD segment whose p_offset is off. 0, or
 * AP_ENOTFOUND / AP_ECORRUPT. */
int elfsym_segment_vaddr(const elfsym_file *f, uint64_t off, uint64_t *vaddr);

/* The GNU build ID (from the PT_NOTE segments) as lowercase hex into hex
 * (cap >= 2 * 64 + 1). 0, AP_ENOTFOUND or AP_ECORRUPT. */
int elfsym_build_id(const elfsym_file *f, char *hex, size_t cap);

/* Sort q by vaddr (elfsym_lookup needs them so). */
void elfsym_sort(elfsym_query *q, size_t n);

/*
 * Scan the symbol table of section type (SHT_SYMTAB or SHT_DYNSYM) for
 * functions (STT_FUNC, STT_GNU_IFUNC, defined) covering each query: a
 * symbol with a size covers [value, value + size); one without covers
 * the ELFSYM_UNSIZED_SPAN bytes from its value, and only when no sized
 * one does. Among several, the nearest start wins, then global over weak
 * over local. q sorted by vaddr; buf (bufsz >= sizeof(ElfW(Sym))) is the
 * scratch the table is streamed through. 0, AP_ENOTFOUND (no such table)
 * or AP_ECORRUPT.
 */
#define ELFSYM_UNSIZED_SPAN 4096
int elfsym_lookup(const elfsym_file *f, uint32_t type, elfsym_query *q, size_t n,
		  void *buf, size_t bufsz);

/*
 * For an address no symbol names (a local function of a stripped object):
 * where its function starts, from the unwind tables stripping keeps. The
 * binary search table of .eh_frame_hdr (PT_GNU_EH_FRAME, encoded
 * DW_EH_PE_datarel | DW_EH_PE_sdata4 as GNU ld, gold and lld write it)
 * gives the last function starting at or below vaddr; its .eh_frame entry
 * (FDE) must then agree on that start and cover vaddr (start + range),
 * its pointers read in the encoding its CIE's "R" augmentation gives.
 * *start: the start (p_vaddr terms), *off: its offset in the file.
 * 0, AP_ENOTFOUND (no table, another encoding, vaddr in no function) or
 * AP_ECORRUPT.
 */
int elfsym_function_start(const elfsym_file *f, uint64_t vaddr, uint64_t *start,
			  uint64_t *off);

/*
 * q's name into out (NUL-terminated), without a symbol version ("@..."),
 * cut at the first byte that is not printable ASCII (so a line of the
 * symbol service stays one line) and at cap - 1 bytes. Its length; 0 when there is none.
 */
size_t elfsym_name(const elfsym_file *f, const elfsym_query *q, char *out, size_t cap);

#endif
