/*
 * preload_elfsym_fuzz.c: libFuzzer target for the runtime's ELF symbol
 * reader (src/preload/elfsym.h). The input is the file; every entry point
 * runs on it (header, segments, build ID, both symbol tables, names, the
 * unwind tables' function starts), with
 * queries at addresses taken from the input itself so lookups hit its
 * symbols. Reads must stay inside the input (the read callback aborts
 * otherwise) and names must be printable and NUL-terminated.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elfsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem {
	const uint8_t *p;
	size_t n;
};

static int mem_read(void *ctx, uint64_t off, void *buf, size_t n)
{
	const struct mem *m = ctx;
	if (off > m->n || n > m->n - off)
		abort(); /* elfsym must check bounds before reading */
	memcpy(buf, m->p + off, n);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = { data, size };
	elfsym_file f = { .read = mem_read, .ctx = &m, .size = size };
	if (elfsym_open(&f) != 0)
		return 0;
	char hex[2 * 64 + 1];
	if (elfsym_build_id(&f, hex, sizeof hex) == 0 && strlen(hex) % 2)
		abort();
	uint64_t v;
	(void)elfsym_segment_vaddr(&f, 0, &v);
	/* Queries: 8-byte words of the input (symbol values among them),
	 * and addresses where the seeds' small objects have their code. */
	elfsym_query q[24];
	size_t nq = 0;
	for (size_t off = 0; off + 8 <= size && nq < 16; off += size / 16 + 8) {
		memset(&q[nq], 0, sizeof q[nq]);
		memcpy(&q[nq].vaddr, data + off, 8);
		q[nq].tag = nq;
		nq++;
	}
	for (uint64_t a = 0x240; nq < 24; a += 4, nq++)
		q[nq] = (elfsym_query){ .vaddr = a, .tag = nq };
	elfsym_sort(q, nq);
	for (size_t i = 1; i < nq; i++)
		if (q[i - 1].vaddr > q[i].vaddr)
			abort();
	/* Function starts from the unwind tables: at or below the address,
	 * inside the file. */
	for (size_t i = 0; i < nq; i++) {
		uint64_t start, off;
		if (elfsym_function_start(&f, q[i].vaddr, &start, &off) == 0 &&
		    (start > q[i].vaddr || off >= size))
			abort();
	}
	static unsigned char buf[4096];
	const uint32_t types[] = { SHT_SYMTAB, SHT_DYNSYM };
	for (size_t t = 0; t < 2; t++) {
		if (elfsym_lookup(&f, types[t], q, nq, buf, sizeof buf) != 0)
			continue;
		for (size_t i = 0; i < nq; i++) {
			char name[64];
			size_t k = elfsym_name(&f, &q[i], name, sizeof name);
			if (k >= sizeof name || name[k] != '\0' || strlen(name) != k)
				abort();
			for (size_t j = 0; j < k; j++)
				if (name[j] < 0x20 || name[j] > 0x7e)
					abort();
		}
	}
	return 0;
}
