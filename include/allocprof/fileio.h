/*
 * allocprof/fileio.h: writing a file so that a reader never sees it half
 * written, shared by the runtime's dumps and the command's outputs.
 */
#ifndef ALLOCPROF_FILEIO_H
#define ALLOCPROF_FILEIO_H

#include <stddef.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write len bytes of buf to path. A regular (or not yet existing) target is
 * replaced atomically: the data goes to a temporary file beside it (created
 * with mode, never following a symbolic link), is fsync'd, then renamed over
 * path, so a crash leaves either the old file or the whole new one. A target
 * that exists and is not a regular file (/dev/null, a FIFO, /dev/stdout) is
 * written in place instead, never replaced. Calls no malloc (safe in the
 * preload runtime). Returns 0, or AP_EIO with errno set (ENAMETOOLONG for a
 * path too long for the temporary name), or AP_EINVAL for a NULL argument.
 */
AP_API int ap_file_write_atomic(const char *path, const void *buf, size_t len,
				unsigned mode);

/* Write all len bytes of buf to fd, retrying short writes and EINTR. 0, or
 * -1 with errno set (EIO for a write that made no progress). */
AP_API int ap_file_write_all(int fd, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
