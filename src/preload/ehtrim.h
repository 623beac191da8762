/*
 * ehtrim.h: giving back the pages of unwind tables that stack captures read.
 *
 * libunwind finds a return address's unwind rules by a binary search of its
 * object's .eh_frame_hdr and a read of the entry in .eh_frame. Those
 * sections are mapped with the object's code, and every page a lookup reads
 * becomes resident in the process. The unwinder learns each address's rule
 * once (unwinder.c), so the pages are of no further use to it; but in a
 * program with much code (clang: 10 MiB of unwind tables in libLLVM and
 * libclang-cpp) they added 7 MiB to its resident size, file pages it would
 * never have touched itself.
 *
 * Every EHTRIM_EVERY lookups (and at most every EHTRIM_GAP_NS), the
 * runtime unmaps from the process the pages
 * of every object's unwind tables with madvise(MADV_DONTNEED): a read-only
 * page of a file mapping comes back from the page cache, unchanged, at its
 * next touch (a minor fault). Only pages that are provably such are given
 * back: inside a PT_LOAD segment without write permission, of an object
 * without text relocations, and, in /proc/self/pagemap, not a private copy
 * (written since it was mapped: a debugger's breakpoint, a hot patch). If
 * pagemap cannot be read, nothing is given back.
 *
 * Never under a seccomp filter (seen at start-up, or installed with prctl
 * later: rt.sandboxed): the trim's system calls (openat, pread64, madvise)
 * are ones such a filter may forbid.
 */
#ifndef AP_PRELOAD_EHTRIM_H
#define AP_PRELOAD_EHTRIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Lookups between two trims: each brings in at most a few pages (the
 * search's, the entry's), so the unwind tables' share of the resident size
 * stays within a few hundred KiB between trims. */
#define EHTRIM_EVERY 32

/* And at most one trim per EHTRIM_GAP_NS: a program whose samples keep
 * meeting new code (or whose return addresses outnumber the unwinder's
 * rule cache, which grows to 16384 entries) would otherwise pay a trim,
 * and the faults that bring the header's search path back, every 32
 * lookups for good. Measured on clang:
 * the same peak as trimming every 32 lookups, a third of the trims. A trim
 * held back is made by the dumper thread when the gap has passed
 * (ehtrim_deadline, ehtrim_poll), so the last burst of lookups does not
 * stay resident. */
#define EHTRIM_GAP_NS 50000000u

/* At start-up: trim when on (option unwind_trim, libunwind the unwinder)
 * and the process runs under no seccomp filter. */
void ehtrim_init(bool on);

/* From a sampling thread (guard set): k more lookups were made. Trims when
 * EHTRIM_EVERY have accumulated and no other thread is trimming. */
void ehtrim_note(unsigned k);

/* For the dumper thread: the CLOCK_MONOTONIC time a held-back trim is
 * due (0: none), and the trim itself once now is past it. */
uint64_t ehtrim_deadline(void);
void ehtrim_poll(uint64_t now);

/* Before a profile is built: trim now if any lookup was made since the
 * last trim, whatever the time since. A dump's transient memory (the
 * profile, zlib's state and output) then takes the place of table pages
 * the process holds at that moment instead of adding to them; the dump at
 * exit is often at the program's peak. */
void ehtrim_before_dump(void);

/* Trim now; returns the resident pages given back, or -1 when trimming
 * is off, another thread is trimming, or pagemap cannot be read. */
long ehtrim_run(void);

/* For verbose=1's memory line: lookups of unwind tables (all, trimming
 * or not), trims made, KiB of resident pages given back. */
void ehtrim_stats(uint64_t *lookups, uint64_t *trims, uint64_t *kib);

void ehtrim_atfork_child(void);

/*
 * The span, in whole pages, of the unwind tables whose .eh_frame_hdr is
 * [hdr, hdr + hdr_len), inside the readable segment [seg_lo, seg_hi) that
 * holds it: from the header to the end of .eh_frame (walked to its zero
 * terminator) when .eh_frame follows, from .eh_frame to the header's end
 * when it comes first. Reads only inside the segment (a header whose
 * .eh_frame pointer leaves it gives none); false when there is no whole
 * page. Exposed for tests/fuzz/preload_ehtrim_fuzz.c.
 */
bool ehtrim_tables_span(uintptr_t hdr, size_t hdr_len, uintptr_t seg_lo, uintptr_t seg_hi,
			uintptr_t *lo, uintptr_t *hi);

#endif
