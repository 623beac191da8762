/*
 * fuzz.h: what the fuzz targets share: libFuzzer's entry point and
 * REQUIRE, which traps (a crash libFuzzer reports, and replay.c's
 * regression run fails on) when a property of the parser's result does
 * not hold.
 */
#ifndef AP_TESTS_FUZZ_H
#define AP_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#define REQUIRE(c)                                                           \
	do {                                                                 \
		if (!(c))                                                    \
			__builtin_trap();                                    \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
