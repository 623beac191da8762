/*
 * boot.h: the bootstrap pool and the resolution of the allocator underneath
 * (boot.c), used by the runtime's initialisation and its range paths.
 */
#ifndef ALLOCPROF_PRELOAD_BOOT_H
#define ALLOCPROF_PRELOAD_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BOOT_POOL_SIZE ((size_t)256 * 1024)

/* Serve the pool from base (the region's first BOOT_POOL_SIZE bytes), or
 * from the static array when base is NULL. Before any pool allocation. */
void boot_place_pool(void *base);
/* Address of the static pool array (the range when there is no region). */
uintptr_t boot_static_pool(void);
/* Where the pool lives (boot_place_pool): read by boot_in_pool, which
 * every free of a pointer the granule filter flags asks first, so it is
 * inline. */
extern __attribute__((visibility("hidden"))) unsigned char *boot_pool;
static inline bool boot_in_pool(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_pool < BOOT_POOL_SIZE;
}
/*
 * Scratch: memory for the libc calls the runtime makes to learn a
 * thread's stack (pthread_getattr_np allocates a CPU set and frees it
 * before returning; for the main thread, at initialisation, glibc reads
 * /proc/self/maps with stdio), on a thread's first sample. Left to the allocator underneath, those allocations
 * land in the program's heap at a moment the sampler chose, and glibc's
 * heap, whose later splits, merges and trims depend on every earlier
 * block, then follows another path: a different count of page faults
 * for the rest of the run, different from seed to seed. Between
 * boot_scratch_begin and boot_scratch_end the thread is inside the
 * runtime, every allocation of it takes the slow path (its sampler's
 * counter held at 0), and the slow paths of malloc and calloc (realloc
 * of NULL is malloc) serve it from a scratch block of the bootstrap pool
 * (boot_scratch_alloc); the memalign family still goes to the allocator
 * underneath, as those calls use none of it. Pool blocks are the
 * runtime's, so their frees do nothing and their reallocs move them.
 * The scratch is reused by the next window: whatever the calls allocate
 * must be freed by its end. One thread at a time; begin returns false
 * (and does nothing) when another holds it, the pool has no room, or the
 * runtime is attached, and the calls then allocate as before. Attached,
 * the entry points reach the program through GOT slots that attach and
 * detach patch and restore one at a time while it runs, so a block's
 * allocation and its free could reach different owners; with the window
 * open there, the attach test's targets died during the attach in 6 of
 * 7 runs (the exact path was not traced).
 */
bool boot_scratch_begin(void);
void boot_scratch_end(void);
/* n bytes (zeroed if zero) of the scratch, or NULL when this thread has
 * no window open or the scratch is full. */
void *boot_scratch_alloc(size_t n, bool zero);
/* In a fork child: no window is open there. */
void boot_scratch_atfork_child(void);
/* Size asked for a pool block. */
size_t boot_size(const void *p);
/* The next definition of a libc symbol (the allocator's, the C++
 * operators'): dlsym(RTLD_NEXT), the objects after this one, when
 * preloaded. When attached, the definition the program's references are
 * bound to: dlsym(RTLD_DEFAULT), since RTLD_NEXT from an object loaded
 * RTLD_LOCAL finds libc's even over a preloaded jemalloc; and when that is
 * the executable's canonical PLT entry (a non-PIE program that takes
 * malloc's address), the first object after it that defines the name.
 * NULL when none does. */
void *boot_next_sym(const char *name);
/* Fill rt_real from boot_next_sym. AP_ENOTFOUND: malloc, free, calloc,
 * realloc or posix_memalign found nowhere (rt_real unchanged).
 * AP_EUNSUPPORTED: posix_memalign is not in the same object as malloc, so
 * the missing entry points cannot be rebuilt on it; rt_real then passes
 * each call to its own next definition, for a runtime that samples
 * nothing. */
int boot_resolve_real(void);
/* The file of the object whose malloc boot_resolve_real found ("?"). */
const char *boot_home_name(void);
/* Does rt_real hold the allocator underneath yet (not the pool's
 * stand-ins)? */
bool boot_real_resolved(void);
/* The stand-in malloc_usable_size when the allocator has none: 0. */
size_t boot_emu_usable(void *p);
/* The load address of the object (executable or shared library) that
 * holds addr, or NULL: how the runtime tells that two symbols belong to
 * the same allocator. */
const void *boot_object_of(const void *addr);

#endif
