/*
 * fileio_internal.h: the library's own form of ap_file_write_atomic
 * (allocprof/fileio.h), for the preload runtime, which writes through a
 * directory descriptor once the program has chroot()ed and marks its
 * profiles before they get their name. Not part of the API.
 */
#ifndef AP_LIB_FILEIO_INTERNAL_H
#define AP_LIB_FILEIO_INTERNAL_H

#include <stddef.h>

/* ap_file_write_atomic with path relative to the directory dirfd
 * (AT_FDCWD: the current directory, as ap_file_write_atomic), and ready,
 * unless NULL, called with the temporary file's descriptor once its data
 * is complete and fsync'd, before it is renamed over path. Same returns. */
int apx_file_write_atomic_at(int dirfd, const char *path, const void *buf, size_t len,
			     unsigned mode, void (*ready)(int fd));

#endif
