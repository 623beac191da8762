/*
 * attach.h: the runtime in a program it was not preloaded into
 * (`allocprof attach`; attach.c, docs/ATTACH.md).
 */
#ifndef AP_PRELOAD_ATTACH_H
#define AP_PRELOAD_ATTACH_H

#include <stdbool.h>

/* In the constructor: was this library loaded after the program started
 * (dlopen'ed by the attach, not in the program's global scope)? Then the
 * constructors leave everything to ap_runtime_attach. */
bool attach_loaded_late(void);
/* The profile comment after "allocprof.attach=": "HEAP_BYTES SOURCE", the
 * allocator's heap when the runtime attached; NULL when not attached. */
const char *attach_note(void);

#endif
