/*
 * fd_id.h: what a descriptor the runtime keeps refers to. A program may
 * close every descriptor (daemons do, at start-up) or dup2 over them, and
 * then its own sockets, pipes, files and directories take the same
 * numbers: the number alone does not say the object is still the
 * runtime's. Before using a number it kept, the runtime checks the object
 * behind it (its device and inode; a socket's or pipe's inode is unique
 * while it exists). The HTTP endpoint's descriptors (http.c) and a
 * chroot()ed program's output directory (outdir.c) are kept this way.
 */
#ifndef AP_PRELOAD_FD_ID_H
#define AP_PRELOAD_FD_ID_H

#include <stdbool.h>
#include <sys/stat.h>

typedef struct fd_id {
	dev_t dev;
	ino_t ino;
} fd_id;

/* fd's object into *id; false when fd is not open. */
static inline bool fd_id_of(int fd, fd_id *id)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		return false;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return true;
}

/* Does fd still refer to the object id was taken from? */
static inline bool fd_still(int fd, const fd_id *id)
{
	fd_id now;
	return fd_id_of(fd, &now) && now.dev == id->dev && now.ino == id->ino;
}

#endif
