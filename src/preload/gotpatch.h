/*
 * gotpatch.h: redirecting a running program's allocator calls to the
 * runtime by rewriting GOT entries (`allocprof attach`, docs/ATTACH.md).
 *
 * Every loaded object calls malloc & co. through its global offset table:
 * a JUMP_SLOT relocation (calls through the PLT) or a GLOB_DAT one (calls
 * and address-taking without a PLT, -fno-plt, -z now). gotpatch_all walks
 * the loaded objects (dl_iterate_phdr), reads each one's dynamic section
 * (its symbol and string tables and relocation tables, as the loader
 * relocated them) and stores the runtime's definition in each entry whose
 * symbol is one of the hooked names. Entries in the RELRO segment are made
 * writable with mprotect for the write and read-only again after. The
 * runtime itself, the allocator object (when it is not libc: libc's own
 * entries for free and realloc are how blocks the program hands to libc
 * come back, so they must be the runtime's), the dynamic loader and the
 * vDSO are skipped.
 *
 * A GOT entry is one aligned 8-byte word, so a thread calling through it
 * concurrently sees the old or the new function, never a mix; blocks
 * allocated by the old one are not the runtime's and its free passes them
 * to the allocator (runtime_core.h, rt_maybe_ours).
 */
#ifndef AP_PRELOAD_GOTPATCH_H
#define AP_PRELOAD_GOTPATCH_H

#include <stdbool.h>
#include <stddef.h>

typedef struct got_hook {
	const char *name;
	void *fn; /* the runtime's definition */
} got_hook;

/*
 * Point every GOT entry of every loaded object (but those skipped, above)
 * for one of the n hooks at its fn. skip_a and skip_b: base addresses of
 * two more objects to leave alone (the runtime, the allocator; 0 = none).
 * Returns the number of entries changed, or -1 when the object list could
 * not be walked. Safe to call again: entries already pointing at fn are
 * left alone.
 */
int gotpatch_all(const got_hook *hooks, size_t n, uintptr_t skip_a, uintptr_t skip_b);

#endif
