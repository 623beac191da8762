/*
 * fileio_test.c: ap_file_write_atomic replaces regular files whole, leaves no
 * temporary behind, and never replaces a device or a pipe (a run as root with
 * output /dev/null once turned /dev/null into a regular file).
 */
#define _GNU_SOURCE
#include "aptest.h"

#include "allocprof/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static void make_dir(void)
{
	strcpy(dir, "/tmp/ap_fileio.XXXXXX");
	if (!mkdtemp(dir))
		dir[0] = 0;
}

static void remove_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int entries(void)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static size_t read_back(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, cap);
	if (fd >= 0)
		close(fd);
	return n < 0 ? 0 : (size_t)n;
}

AP_TEST(replaces_a_regular_file_whole_with_the_given_mode)
{
	make_dir();
	AP_CHECK(dir[0]);
	char path[128], buf[64];
	snprintf(path, sizeof path, "%s/out.pb", dir);
	AP_CHECK_EQ_INT(ap_file_write_atomic(path, "first version", 13, 0600), 0);
	AP_CHECK_EQ_INT(ap_file_write_atomic(path, "second", 6, 0600), 0);
	size_t n = read_back(path, buf, sizeof buf);
	struct stat st;
	int rc = stat(path, &st);
	int files = entries();
	remove_dir();
	AP_CHECK_EQ_U64(n, 6);
	AP_CHECK(memcmp(buf, "second", 6) == 0);
	AP_CHECK_EQ_INT(rc, 0);
	AP_CHECK_EQ_INT(st.st_mode & 0777, 0600);
	AP_CHECK_EQ_INT(files, 1); /* no temporary left behind */
}

/* A null device of our own (mknod needs root; without it the FIFO test
 * below still covers the in-place branch), so a regression cannot clobber
 * the machine's /dev/null. */
AP_TEST(a_character_device_is_never_replaced)
{
	make_dir();
	AP_CHECK(dir[0]);
	char path[128];
	snprintf(path, sizeof path, "%s/null", dir);
	if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) != 0) {
		remove_dir();
		AP_SKIP("mknod not permitted (needs root or CAP_MKNOD)");
	}
	int rc = ap_file_write_atomic(path, "x", 1, 0600);
	struct stat st;
	int srt = stat(path, &st);
	int files = entries();
	remove_dir();
	AP_CHECK_EQ_INT(rc, 0);
	AP_CHECK_EQ_INT(srt, 0);
	AP_CHECK(S_ISCHR(st.st_mode));
	AP_CHECK_EQ_INT(files, 1);
}

AP_TEST(a_fifo_is_written_in_place)
{
	make_dir();
	AP_CHECK(dir[0]);
	char path[128];
	snprintf(path, sizeof path, "%s/fifo", dir);
	AP_CHECK_EQ_INT(mkfifo(path, 0600), 0);
	pid_t pid = fork();
	if (pid == 0) {
		/* If the writer wrongly renamed instead, nobody ever opens the
		 * FIFO for writing: fail after a bound instead of hanging. */
		alarm(10);
		char buf[16];
		size_t n = read_back(path, buf, sizeof buf);
		_exit(n == 5 && memcmp(buf, "hello", 5) == 0 ? 0 : 1);
	}
	int rc = ap_file_write_atomic(path, "hello", 5, 0600);
	if (rc != 0)
		kill(pid, SIGKILL);
	int status = -1;
	waitpid(pid, &status, 0);
	struct stat st;
	int srt = stat(path, &st);
	remove_dir();
	AP_CHECK_EQ_INT(rc, 0);
	AP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	AP_CHECK_EQ_INT(srt, 0);
	AP_CHECK(S_ISFIFO(st.st_mode));
}

AP_TEST(missing_directory_is_an_io_error_with_errno)
{
	errno = 0;
	int rc = ap_file_write_atomic("/nonexistent-ap-dir/x.pb", "x", 1, 0600);
	AP_CHECK_EQ_INT(rc, AP_EIO);
	AP_CHECK_EQ_INT(errno, ENOENT);
}

AP_TEST(overlong_path_is_refused_without_writing)
{
	static char path[PATH_MAX + 16];
	memset(path, 'a', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = 0;
	errno = 0;
	AP_CHECK_EQ_INT(ap_file_write_atomic(path, "x", 1, 0600), AP_EIO);
	AP_CHECK_EQ_INT(errno, ENAMETOOLONG);
}

AP_TEST(null_arguments_are_invalid)
{
	AP_CHECK_EQ_INT(ap_file_write_atomic(NULL, "x", 1, 0600), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_file_write_atomic("/tmp/x", NULL, 1, 0600), AP_EINVAL);
}
