/*
 * elfdyn.c: dynamic symbols and the machine of ELF files (elfdyn.h).
 */
#define _GNU_SOURCE
#include "elfdyn.h"

#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "allocprof/common.h"

static Elf *open_elf(const char *path, int *fd)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	Elf *e = elf_begin(*fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		return NULL;
	}
	return e;
}

/* The page-aligned p_vaddr of the first PT_LOAD (0 for shared objects). */
static int first_load(Elf *e, uint64_t *vaddr)
{
	size_t n;
	if (elf_getphdrnum(e, &n) != 0)
		return AP_ECORRUPT;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
			return 0;
		}
	}
	return AP_ECORRUPT;
}

static int find_dynsym(Elf *e, const char *name, uint64_t *value)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			return AP_ECORRUPT;
		size_t count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value)
				continue;
			const char *n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && strcmp(n, name) == 0) {
				*value = s.st_value;
				return 0;
			}
		}
	}
	return AP_ENOTFOUND;
}

int elfdyn_lookup(const char *path, const char *name, uint64_t *offset)
{
	int fd;
	Elf *e = open_elf(path, &fd);
	if (!e)
		return AP_EIO;
	uint64_t base = 0, v = 0;
	int rc = first_load(e, &base);
	if (rc == 0)
		rc = find_dynsym(e, name, &v);
	if (rc == 0)
		*offset = v - base;
	elf_end(e);
	close(fd);
	return rc;
}

/* fn(the ELF file at path), or AP_EIO when it cannot be opened as one. */
static int query(const char *path, int (*fn)(Elf *))
{
	int fd;
	Elf *e = open_elf(path, &fd);
	if (!e)
		return AP_EIO;
	int rc = fn(e);
	elf_end(e);
	close(fd);
	return rc;
}

static int machine(Elf *e)
{
	GElf_Ehdr eh;
	return gelf_getehdr(e, &eh) ? (int)eh.e_machine : AP_ECORRUPT;
}

int elfdyn_machine(const char *path)
{
	return query(path, machine);
}

static int has_interp(Elf *e)
{
	size_t n;
	if (elf_getphdrnum(e, &n))
		return AP_ECORRUPT;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
			return 1;
	}
	return 0;
}

int elfdyn_has_interp(const char *path)
{
	return query(path, has_interp);
}

static int is_go(Elf *e)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx))
		return AP_ECORRUPT;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh)
					   ? elf_strptr(e, shstrndx, sh.sh_name)
					   : NULL;
		if (name && !strcmp(name, ".note.go.buildid"))
			return 1;
	}
	return 0;
}

int elfdyn_is_go(const char *path)
{
	return query(path, is_go);
}
