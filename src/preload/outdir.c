/*
 * outdir.c: the output directory of a program that chroot()s (outdir.h).
 */
#include "outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dump.h"
#include "fd_id.h"
#include "log.h"
#include "runtime_core.h"

static int dir_fd = -1;
static fd_id dir_id;
static atomic_bool chrooted; /* set after dir_fd, read by the dumper */
/* The directory's text as it starts every expanded name, without the
 * final '/': rt.pattern's up to its last '/'. */
static char dir_text[RT_PATH_CAP];
static size_t dir_len;
static bool has_slash; /* else names are relative to the cwd */

void outdir_before_chroot(void)
{
	/* Also the names of the program's files, which the new root may not
	 * have (an attached runtime's first dump may not have come yet). */
	dump_prime_paths(&rt.a);
	if (dir_fd >= 0)
		return; /* a second chroot: the first root's directory stays */
	const char *slash = strrchr(rt.pattern, '/');
	size_t n = slash ? (size_t)(slash - rt.pattern) : 0;
	if (memchr(rt.pattern, '%', n)) {
		rt_log("the program calls chroot(); the directory of '%s' has "
		       "%%-fields, so its names are looked up inside the new root",
		       rt.pattern);
		return;
	}
	memcpy(dir_text, rt.pattern, n);
	dir_text[n] = '\0';
	dir_len = n;
	has_slash = slash != NULL;
	int e = errno;
	int fd = open(!slash ? "." : n == 0 ? "/" : dir_text, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd_id_of(fd, &dir_id))
		dir_fd = fd;
	else if (fd >= 0)
		close(fd);
	errno = e;
}

void outdir_after_chroot(bool ok)
{
	if (ok) {
		atomic_store(&chrooted, true);
		return;
	}
	if (!atomic_load(&chrooted) && dir_fd >= 0) {
		int e = errno;
		close(dir_fd);
		dir_fd = -1;
		errno = e;
	}
}

int outdir_at(const char *path, const char **name)
{
	if (!atomic_load(&chrooted) || dir_fd < 0)
		return -1;
	if (has_slash && (strncmp(path, dir_text, dir_len) != 0 || path[dir_len] != '/'))
		return -1;
	const char *rest = has_slash ? path + dir_len + 1 : path;
	if (!*rest || strchr(rest, '/'))
		return -1;
	if (!fd_still(dir_fd, &dir_id))
		return -1; /* the program closed it; the number may be its own now */
	*name = rest;
	return dir_fd;
}

int outdir_stat(const char *path, struct stat *st)
{
	const char *name;
	int fd = outdir_at(path, &name);
	return fd >= 0 ? fstatat(fd, name, st, 0) : stat(path, st);
}

ssize_t outdir_getxattr(const char *path, const char *attr, void *buf, size_t n)
{
	const char *name;
	int dfd = outdir_at(path, &name);
	if (dfd < 0)
		return getxattr(path, attr, buf, n);
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	ssize_t k = fgetxattr(fd, attr, buf, n);
	int e = errno;
	close(fd);
	errno = e;
	return k;
}
