/*
 * fileio.c: atomic file replacement (allocprof/fileio.h). Profiles are what a
 * user keeps from a run, so a dump interrupted by a crash, a full disk or a
 * concurrent reader must never leave a truncated file under the final name:
 * write a temporary file, fsync it, rename it over the target. Devices and
 * pipes cannot be renamed over (and must not be: replacing /dev/null with a
 * regular file breaks every program on the machine), so those are written in
 * place.
 */
#define _GNU_SOURCE
#include "allocprof/fileio.h"
#include "fileio_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int ap_file_write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int fail_keep_errno(int fd, int dirfd, const char *unlink_path)
{
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (unlink_path)
		unlinkat(dirfd, unlink_path, 0);
	errno = e;
	return AP_EIO;
}

static int write_in_place(int dirfd, const char *path, const void *buf, size_t len)
{
	int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ap_file_write_all(fd, buf, len))
		return fail_keep_errno(fd, dirfd, NULL);
	if (close(fd))
		return AP_EIO;
	return 0;
}

int apx_file_write_atomic_at(int dirfd, const char *path, const void *buf, size_t len,
			     unsigned mode, void (*ready)(int fd))
{
	static _Atomic unsigned long seq;
	char tmp[PATH_MAX];
	struct stat st;

	if (!path || (!buf && len)) {
		errno = EINVAL;
		return AP_EINVAL;
	}
	if (fstatat(dirfd, path, &st, 0) == 0 && !S_ISREG(st.st_mode))
		return write_in_place(dirfd, path, buf, len);
	/* pid and a counter keep concurrent writers (threads, forked
	 * children) from sharing a temporary name. */
	int k = snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lu", path, (long)getpid(),
			 atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed));
	if (k < 0 || (size_t)k >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return AP_EIO;
	}
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			(mode_t)mode);
	if (fd < 0)
		return fail_keep_errno(-1, dirfd, NULL);
	if (ap_file_write_all(fd, buf, len) || fsync(fd))
		return fail_keep_errno(fd, dirfd, tmp);
	if (ready)
		ready(fd);
	if (close(fd))
		return fail_keep_errno(-1, dirfd, tmp);
	if (renameat(dirfd, tmp, dirfd, path))
		return fail_keep_errno(-1, dirfd, tmp);
	return 0;
}

int ap_file_write_atomic(const char *path, const void *buf, size_t len, unsigned mode)
{
	return apx_file_write_atomic_at(AT_FDCWD, path, buf, len, mode, NULL);
}
