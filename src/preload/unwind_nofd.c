/*
 * unwind_nofd.c: libunwind's memory checks without file descriptors.
 *
 * libunwind 1.6 (Debian 12's libunwind8, built with conservative checks)
 * validates every address it reads while stepping through a frame: after
 * mincore()/msync() it writes one byte from the address into a pipe it
 * opened when it initialised, and drains the pipe with read() first. That
 * pipe is two descriptors the program can see and collide with: a daemon
 * that closes every descriptor >= 3 and opens its own files gets them read
 * from (a byte lost), written to, or closed and replaced by a new pipe the
 * next time a sampled allocation is unwound; and `ulimit -n 5` leaves the
 * program two descriptors fewer. The library has no switch for it.
 *
 * So the runtime redirects libunwind's own imports -- and only libunwind's:
 * the GOT slots of its shared object, never the program's symbols -- of
 * pipe/pipe2, read, write, syscall and close. pipe2 hands out two negative
 * "descriptors" that no kernel call ever sees; read on the first reports an
 * empty pipe (EAGAIN), close of either succeeds, and the write (libunwind
 * calls syscall(SYS_write, ...)) becomes a descriptor-free readability test
 * of the address: process_vm_readv on our own pid, which fails with EFAULT
 * exactly where the write would have. Every other call passes through to
 * libc unchanged, so libunwind's file access when it reads an ELF image
 * (open/read/close in one call) keeps working. Where process_vm_readv is
 * refused (seccomp), the mincore() libunwind ran just before stands as the
 * check: the address is mapped. Addresses on the thread's own stack,
 * between the unwinding frame and the top (unwind_stack_readable), are
 * answered with no system call at all, here and for libunwind's mincore:
 * a seccomp filter that kills at either call (systemd's SystemCallFilter=
 * kills by default) would otherwise end the program at a new thread's
 * first sample.
 *
 * This must happen before libunwind initialises (its first unw_* call opens
 * the pipe): unwind_prepare calls unwind_nofd_install first.
 */
#include "unwinder.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "allocprof/common.h"

/* Negative, so no system call could ever act on them. */
#define NOFD_READ (-4096)
#define NOFD_WRITE (-4095)

static bool is_fake(long fd)
{
	return fd == NOFD_READ || fd == NOFD_WRITE;
}

static int hook_pipe2(int fds[2], int flags)
{
	(void)flags;
	fds[0] = NOFD_READ;
	fds[1] = NOFD_WRITE;
	return 0;
}

static int hook_pipe(int fds[2])
{
	return hook_pipe2(fds, 0);
}

/* Is [addr, addr + n) readable? n bytes or -1 (EFAULT), as write would. */
static long probe(const void *addr, size_t n)
{
	unsigned char tmp[8];
	if (n > sizeof tmp)
		n = sizeof tmp;
	if (unwind_stack_readable((uintptr_t)addr, n))
		return (long)n; /* the frames being unwound: no system call */
	struct iovec local = { tmp, n };
	struct iovec remote = { (void *)(uintptr_t)addr, n };
	ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (got == (ssize_t)n)
		return (long)n;
	if (got < 0 && errno != EFAULT) {
		errno = 0;
		return (long)n; /* refused: mincore's "mapped" stands */
	}
	errno = EFAULT;
	return -1;
}

/* libunwind asks mincore first: for pages of the thread's own stack in
 * use, the answer without a system call. */
static int hook_mincore(void *addr, size_t len, unsigned char *vec)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (len && unwind_stack_readable((uintptr_t)addr, len)) {
		memset(vec, 1, (len + page - 1) / page);
		return 0;
	}
	return mincore(addr, len, vec);
}

static ssize_t hook_read(int fd, void *buf, size_t n)
{
	if (is_fake(fd)) {
		errno = EAGAIN; /* an empty non-blocking pipe */
		return -1;
	}
	return read(fd, buf, n);
}

static ssize_t hook_write(int fd, const void *buf, size_t n)
{
	if (is_fake(fd))
		return probe(buf, n);
	return write(fd, buf, n);
}

static int hook_close(int fd)
{
	if (is_fake(fd))
		return 0;
	return close(fd);
}

static long hook_syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_write && is_fake((int)a1))
		return probe((const void *)(uintptr_t)a2, (size_t)a3);
	if (nr == SYS_read && is_fake((int)a1))
		return hook_read((int)a1, (void *)(uintptr_t)a2, (size_t)a3);
	if (nr == SYS_close && is_fake((int)a1))
		return 0;
	return syscall(nr, a1, a2, a3, a4, a5, a6);
}

struct hook {
	const char *name;
	void *fn;
};

static const struct hook hooks[] = {
	{ "pipe2", (void *)hook_pipe2 }, { "pipe", (void *)hook_pipe },
	{ "read", (void *)hook_read },   { "write", (void *)hook_write },
	{ "close", (void *)hook_close }, { "syscall", (void *)hook_syscall },
	{ "mincore", (void *)hook_mincore },
};

#if defined(__x86_64__)
#define R_SLOT(t) ((t) == R_X86_64_JUMP_SLOT || (t) == R_X86_64_GLOB_DAT)
#elif defined(__aarch64__)
#define R_SLOT(t) ((t) == R_AARCH64_JUMP_SLOT || (t) == R_AARCH64_GLOB_DAT)
#else
#define R_SLOT(t) 0
#endif

struct patch_state {
	uintptr_t target;  /* an address inside libunwind's text */
	int found, patched;
};

/* Store fn into the GOT slot, lifting RELRO protection for the store. */
static int store_slot(uintptr_t slot, void *fn, uintptr_t relro_lo, uintptr_t relro_hi)
{
	bool ro = slot >= relro_lo && slot < relro_hi;
	uintptr_t page = slot & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
	size_t plen = (size_t)sysconf(_SC_PAGESIZE);
	if (ro && mprotect((void *)page, plen, PROT_READ | PROT_WRITE) != 0)
		return -1;
	__atomic_store_n((void **)slot, fn, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)page, plen, PROT_READ);
	return 0;
}

static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	/* glibc relocates these entries in place; other loaders may not. */
	return v >= base ? (uintptr_t)v : base + (uintptr_t)v;
}

static void patch_relocs(uintptr_t base, const ElfW(Rela) *r, size_t bytes,
			 const ElfW(Sym) *syms, const char *strs,
			 uintptr_t relro_lo, uintptr_t relro_hi, int *patched)
{
	for (size_t i = 0; i < bytes / sizeof *r; i++) {
		if (!R_SLOT(ELF64_R_TYPE(r[i].r_info)))
			continue;
		const char *name = strs + syms[ELF64_R_SYM(r[i].r_info)].st_name;
		for (size_t h = 0; h < sizeof hooks / sizeof hooks[0]; h++)
			if (strcmp(name, hooks[h].name) == 0 &&
			    store_slot(base + r[i].r_offset, hooks[h].fn, relro_lo,
				       relro_hi) == 0)
				(*patched)++;
	}
}

static int patch_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct patch_state *st = data;
	uintptr_t base = info->dlpi_addr, relro_lo = 0, relro_hi = 0;
	const ElfW(Dyn) *dyn = NULL;
	bool mine = false;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = base + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && st->target >= s && st->target < s + ph->p_memsz)
			mine = true;
		else if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)s;
		else if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = s;
			relro_hi = s + ph->p_memsz;
		}
	}
	if (!mine)
		return 0;
	st->found = 1;
	/* Only libunwind's own object: never a program that links it in. */
	if (!dyn || !info->dlpi_name || !strstr(info->dlpi_name, "libunwind"))
		return 1;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmpsz = 0, relasz = 0;
	const ElfW(Sym) *syms = NULL;
	const char *strs = NULL;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: jmpsz = d->d_un.d_val; break;
		case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		case DT_SYMTAB: syms = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_STRTAB: strs = (const char *)dyn_ptr(base, d->d_un.d_ptr); break;
		default: break;
		}
	}
	if (!syms || !strs)
		return 1;
	if (jmprel)
		patch_relocs(base, jmprel, jmpsz, syms, strs, relro_lo, relro_hi, &st->patched);
	if (rela)
		patch_relocs(base, rela, relasz, syms, strs, relro_lo, relro_hi, &st->patched);
	return 1;
}

int unwind_nofd_install(void)
{
	static int result = 1; /* 1 = not tried yet */
	if (result != 1)
		return result;
	struct patch_state st = { 0, 0, 0 };
	void *fn = (void *)unw_backtrace;
	memcpy(&st.target, &fn, sizeof st.target);
	dl_iterate_phdr(patch_cb, &st);
	/* pipe2, read, close and syscall (or write) at least. */
	result = st.patched >= 4 ? 0 : AP_EUNSUPPORTED;
	return result;
}
