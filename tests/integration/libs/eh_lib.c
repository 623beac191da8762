/*
 * eh_lib.c: 256 functions built without frame pointers, each allocating
 * once, for progs/eh_pages: lookups of unwind tables that are not the
 * program's (tests/integration/preload_ehtrim_test.sh).
 */
#include <stddef.h>

#include "../progs/eh_fns.h"

__attribute__((visibility("default"))) void eh_lib_run(void);

#define FN(k) EH_FN(g##k)
#define REF(k) g##k,
EH_L4(FN, 1)
static void (*const fns[])(void) = { EH_L4(REF, 1) };

void eh_lib_run(void)
{
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
		fns[i]();
}
