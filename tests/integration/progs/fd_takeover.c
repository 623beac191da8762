/*
 * fd_takeover.c: a daemon that takes the descriptor numbers the runtime's
 * HTTP endpoint holds, for tests/integration/preload_fds_test.sh.
 *
 * Run with http= on, the runtime holds a listening socket and both ends of
 * a pipe. The program finds them in /proc/self/fd and puts its own objects
 * on those numbers:
 *   dup2      its listening socket, its pipe's read end and a data file
 *             replace them with dup2 (no moment where a number is free);
 *   closefrom it closes every descriptor >= 3, as daemons do, and at once
 *             opens the same three, which take the lowest numbers.
 * Then it uses them as a program would, and each step fails if the
 * runtime still treats the numbers as its own:
 *   - a message written into its pipe must be read back whole, and the
 *     process must not burn CPU while it waits (a thread polling a
 *     readable descriptor it never drains spins);
 *   - a connection to its listening socket must reach its own accept;
 *   - a fork child must find all three still open and write its line;
 *   - the data file (checked by the test after exit) must hold exactly
 *     "parent\nchild\n": nothing written into it, nothing lost.
 *
 * Usage: fd_takeover dup2|closefrom DATAFILE
 * Prints "ok" and exits 0; names the failed step and exits 1; exits 3
 * when the runtime holds no descriptor (http= not on).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "fd_takeover: %s: %s\n", what, strerror(errno));
	return 1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The runtime's descriptors: the socket, the pipe's read and write ends.
 * All are close-on-exec, and the pipe's two ends share one inode; what the
 * process inherited (a harness's pipe) is neither, as a rule. */
static int find_runtime_fds(int *sock, int *rd, int *wr)
{
	*sock = *rd = *wr = -1;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	char rlink[128] = "", wlink[128] = "";
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		if (fd < 3 || fd == dirfd(d) || !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
			continue;
		char path[64], link[128];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, link, sizeof link - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (strncmp(link, "socket:", 7) == 0) {
			*sock = fd;
		} else if (strncmp(link, "pipe:", 5) == 0) {
			bool w = (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY;
			*(w ? wr : rd) = fd;
			strcpy(w ? wlink : rlink, link);
		}
	}
	closedir(d);
	return *sock >= 0 && *rd >= 0 && *wr >= 0 && strcmp(rlink, wlink) == 0 ? 0 : -1;
}

static int listener(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0)
		return -1;
	return fd;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "dup2") != 0 && strcmp(argv[1], "closefrom") != 0)) {
		fprintf(stderr, "usage: fd_takeover dup2|closefrom DATAFILE\n");
		return 2;
	}
	int sock, rd, wr;
	if (find_runtime_fds(&sock, &rd, &wr) != 0) {
		fprintf(stderr, "fd_takeover: the runtime holds no socket and pipe\n");
		return 3;
	}
	int p[2];
	int lfd, dfd;
	if (strcmp(argv[1], "dup2") == 0) {
		int l = listener();
		if (l < 0 || pipe(p) != 0)
			return fail("listener or pipe");
		int d = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
		if (d < 0)
			return fail("open the data file");
		if (dup2(l, sock) < 0 || dup2(p[0], rd) < 0 || dup2(d, wr) < 0)
			return fail("dup2");
		close(l);
		close(p[0]);
		close(d);
		lfd = sock;
		p[0] = rd;
		dfd = wr;
	} else {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		lfd = listener();
		if (lfd < 0 || pipe(p) != 0)
			return fail("listener or pipe");
		dfd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
		if (dfd < 0)
			return fail("open the data file");
	}

	/* Let the runtime's thread wake (its pipe lost its writer) and look. */
	sleep_ms(100);

	/* The pipe: what goes in comes out, and waiting costs no CPU. */
	if (write(p[1], "ping", 4) != 4)
		return fail("write the pipe");
	double c0 = cpu_s();
	sleep_ms(300);
	double used = cpu_s() - c0;
	char buf[8] = { 0 };
	int fl = fcntl(p[0], F_GETFL);
	fcntl(p[0], F_SETFL, fl | O_NONBLOCK);
	if (read(p[0], buf, sizeof buf) != 4 || memcmp(buf, "ping", 4) != 0)
		return fail("the pipe lost what was written into it");
	if (used > 0.1) {
		fprintf(stderr, "fd_takeover: %.3f s of CPU while idle for 0.3 s\n", used);
		return 1;
	}

	/* The listener: a connection reaches the program's accept. */
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	if (getsockname(lfd, (struct sockaddr *)&a, &al) != 0)
		return fail("getsockname");
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, al) != 0)
		return fail("connect to the program's own listener");
	sleep_ms(200);
	fl = fcntl(lfd, F_GETFL);
	fcntl(lfd, F_SETFL, fl | O_NONBLOCK);
	int got = accept(lfd, NULL, NULL);
	if (got < 0)
		return fail("the program's connection never reached its accept");
	close(got);
	close(c);

	if (write(dfd, "parent\n", 7) != 7)
		return fail("write the data file");

	/* A fork child finds every descriptor open. */
	pid_t pid = fork();
	if (pid < 0)
		return fail("fork");
	if (pid == 0) {
		if (fcntl(lfd, F_GETFD) < 0 || fcntl(p[0], F_GETFD) < 0 ||
		    fcntl(p[1], F_GETFD) < 0 || fcntl(dfd, F_GETFD) < 0) {
			fprintf(stderr, "fd_takeover: the child lost a descriptor\n");
			_exit(1);
		}
		_exit(write(dfd, "child\n", 6) == 6 ? 0 : 1);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fd_takeover: the fork child failed\n");
		return 1;
	}
	/* Allocate a little so the exit profile is not empty. */
	for (int i = 0; i < 1000; i++)
		free(malloc(1000 + (size_t)i));
	printf("ok\n");
	return 0;
}
