/*
 * report_gen_bench.c: writes a large allocprof heap profile whose
 * addresses lie in the code of a real binary, for the report benchmark
 * (bench/suites/report.sh): SAMPLES (stack, size) samples over STACKS
 * stacks of depth 8..24 drawn from a pool of code addresses spread over the
 * binary's executable segment, so symbolization meets thousands of
 * distinct functions. Values are what the runtime would write at R = 512
 * KiB for 1-3 sampled allocations per sample.
 *
 * Usage: report_gen_bench BINARY OUT.pb.gz [SAMPLES [STACKS]]
 */
#define _GNU_SOURCE
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/estimate.h"
#include "allocprof/prng.h"
#include "allocprof/profile.h"

#define RATE 524288
#define POOL 20000

struct target {
	uint64_t vaddr, offset, size, bias;
	char build_id[128];
};

static int read_target(const char *path, struct target *t)
{
	FILE *f = fopen(path, "rb");
	Elf64_Ehdr eh;
	if (!f || fread(&eh, sizeof eh, 1, f) != 1 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		goto bad;
	t->bias = eh.e_type == ET_DYN ? 0x555555554000ull : 0;
	t->size = 0;
	t->build_id[0] = 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (fseek(f, (long)(eh.e_phoff + i * eh.e_phentsize), SEEK_SET) ||
		    fread(&ph, sizeof ph, 1, f) != 1)
			goto bad;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && !t->size) {
			t->vaddr = ph.p_vaddr;
			t->offset = ph.p_offset;
			t->size = ph.p_filesz;
		}
		if (ph.p_type == PT_NOTE && !t->build_id[0] && ph.p_filesz < 65536) {
			unsigned char *n = malloc(ph.p_filesz);
			if (n && !fseek(f, (long)ph.p_offset, SEEK_SET) &&
			    fread(n, 1, ph.p_filesz, f) == ph.p_filesz) {
				for (size_t o = 0; o + 12 <= ph.p_filesz;) {
					Elf64_Nhdr *nh = (Elf64_Nhdr *)(void *)(n + o);
					size_t d = o + 12 + ((nh->n_namesz + 3) & ~3u);
					if (nh->n_type == NT_GNU_BUILD_ID && d + nh->n_descsz <= ph.p_filesz)
						for (unsigned j = 0; j < nh->n_descsz && j < 60; j++)
							snprintf(t->build_id + 2 * j, 3, "%02x", n[d + j]);
					o = d + ((nh->n_descsz + 3) & ~3u);
				}
			}
			free(n);
		}
	}
	fclose(f);
	return t->size ? 0 : -1;
bad:
	if (f)
		fclose(f);
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: report_gen_bench BINARY OUT.pb.gz [SAMPLES [STACKS]]\n");
		return 1;
	}
	size_t nsamples = argc > 3 ? strtoul(argv[3], NULL, 10) : 100000;
	size_t nstacks = argc > 4 ? strtoul(argv[4], NULL, 10) : 5000;
	struct target t;
	char real[4096];
	if (!realpath(argv[1], real) || read_target(real, &t)) {
		fprintf(stderr, "report_gen_bench: %s: not a readable ELF64 executable\n", argv[1]);
		return 1;
	}
	ap_profile *p;
	ap_prng r;
	ap_prng_seed(&r, 42);
	if (ap_profile_create(NULL, &p) || ap_profile_init_heap(p, RATE))
		return 1;
	ap_mapping m = {0};
	m.memory_start = t.bias + t.vaddr;
	m.memory_limit = m.memory_start + t.size;
	m.file_offset = t.offset;
	m.filename = ap_profile_intern(p, real);
	m.build_id = ap_profile_intern(p, t.build_id);
	uint64_t mid, *pool = malloc(POOL * sizeof *pool);
	if (!pool || ap_profile_add_mapping(p, &m, &mid))
		return 1;
	for (size_t i = 0; i < POOL; i++) {
		ap_location l = {0, mid, m.memory_start + ap_prng_below(&r, t.size), NULL, 0, false};
		if (ap_profile_add_location(p, &l, &pool[i]))
			return 1;
	}
	uint64_t (*stacks)[24] = malloc(nstacks * sizeof *stacks);
	size_t *depth = malloc(nstacks * sizeof *depth);
	if (!stacks || !depth)
		return 1;
	for (size_t s = 0; s < nstacks; s++) {
		depth[s] = 8 + ap_prng_below(&r, 17);
		for (size_t d = 0; d < depth[s]; d++)
			stacks[s][d] = pool[ap_prng_below(&r, POOL)];
	}
	int64_t kbytes = ap_profile_intern(p, "bytes");
	for (size_t i = 0; i < nsamples; i++) {
		size_t s = i % nstacks;
		uint64_t size = 16ull << ((i / nstacks) % 17); /* 16 B .. 1 MiB */
		double k = (double)(1 + i % 3), pi = ap_prob_sampled(size, RATE);
		double z = (double)size, vo = (1 - pi) / (pi * pi);
		double v[14] = {k / pi, k * z / pi, k / pi, k * z / pi, k, k * z / 2,
				k * vo * z * z, k * vo, k, k * z / 2, k * vo * z * z, k * vo,
				k * z / pi, k * z / pi};
		int64_t vals[AP_HEAP_NVALUES] = {0};
		for (int j = 0; j < 14; j++)
			vals[j] = (int64_t)(v[j] + 0.5);
		ap_label lb = {kbytes, 0, (int64_t)size, kbytes};
		if (ap_profile_add_sample(p, stacks[s], depth[s], vals, &lb, 1))
			return 1;
	}
	unsigned char *buf;
	size_t len;
	FILE *f = fopen(argv[2], "wb");
	if (!f || ap_pprof_encode(p, true, NULL, &buf, &len) || fwrite(buf, 1, len, f) != len ||
	    fclose(f)) {
		fprintf(stderr, "report_gen_bench: cannot write %s\n", argv[2]);
		return 1;
	}
	free(buf);
	free(pool);
	free(stacks);
	free(depth);
	ap_profile_destroy(p);
	return 0;
}
