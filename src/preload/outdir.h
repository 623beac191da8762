/*
 * outdir.h: the output directory of a program that chroot()s.
 *
 * Daemons that separate privileges (name servers, mail and FTP servers,
 * sshd's children) chroot into an empty directory after start-up, where the
 * output pattern's directory no longer exists: every later profile was lost
 * ("No such file or directory"). The interposed chroot opens that directory
 * (O_PATH) just before the call and keeps it; afterwards the runtime reaches
 * names in it through that descriptor. It is the runtime's only descriptor
 * besides the HTTP endpoint's, and it exists only in a process that
 * chroot()ed: each use first checks (fd_id.h) that the number still holds
 * the directory, so a program that closes every descriptor loses the profiles
 * written after that, never its own files.
 */
#ifndef AP_PRELOAD_OUTDIR_H
#define AP_PRELOAD_OUTDIR_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Before the real chroot(): open the output pattern's directory (whose
 * text has no %) when none is open yet. After it: keep it on success
 * (ok), close it on failure. Under rt_enter. */
void outdir_before_chroot(void);
void outdir_after_chroot(bool ok);

/* A descriptor for path's directory and path's last component, when the
 * program has chroot()ed and path lies directly in the kept directory;
 * else -1 (reach path by name). */
int outdir_at(const char *path, const char **name);

/* stat(path) and getxattr(path, ...) that go through outdir_at when it
 * applies. */
int outdir_stat(const char *path, struct stat *st);
ssize_t outdir_getxattr(const char *path, const char *attr, void *buf, size_t n);

#endif
