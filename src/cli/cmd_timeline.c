/*
 * cmd_timeline.c: `allocprof timeline`: the live heap of one process over
 * time, from its interval dumps (series.h): an interactive SVG by default
 * (timeline.h), a PNG through rsvg-convert (librsvg2-bin), JSON or a text
 * table. The leak verdicts (leakview.h) mark the sites that keep growing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "cmdopts.h"
#include "commands.h"
#include "leakview.h"
#include "series.h"
#include "timeline.h"

extern char **environ;

static const char timeline_usage[] =
	"usage: allocprof timeline [--svg|--png|--json|--text] [-o FILE]\n"
	"                          [--top N] [--title TEXT] [--width PX]\n"
	"                          [--height PX] [--fdr Q] [--level L]\n"
	"                          [--by function|line|stack] [--pid PID]\n"
	"                          [--focus RE] [--ignore RE] [--skip RE]\n"
	"                          [--no-skip] [--full-names] [--no-symbolize]\n"
	"                          PROFILE|DIR...\n"
	"\n"
	"The live heap of one process over time, from its interval dumps\n"
	"(ALLOCPROF_OPTIONS=interval=1s, or 'allocprof run -e interval=1s'),\n"
	"given as files or directories of them: the top N sites' estimated\n"
	"live bytes as stacked areas (the rest as 'other'), the interval band\n"
	"of the total, the peak marked, and the sites 'allocprof leaks' flags\n"
	"hatched in red. In a browser, hovering the plot shows the time, the\n"
	"site under the pointer with its estimate and interval, and the total.\n"
	"\n"
	"  --svg          interactive SVG (default)\n"
	"  --png          PNG image, through rsvg-convert (librsvg2-bin)\n"
	"  --json         one JSON object: every point, the drawn sites, the rest\n"
	"  --text         a table: one line per point\n"
	"  -o FILE        write to FILE (replaced atomically) instead of stdout\n"
	"  --top N        sites drawn (default 8; 0 = all); leaks come first\n"
	"  --title TEXT   heading of the graph\n"
	"  --width PX, --height PX  image size (default 1200 x 640)\n"
	"  --fdr Q        false discovery rate of the leak marks (default 0.05)\n"
	"  --level L      level of the intervals (default 0.95)\n"
	VC_SERIES_HELP
	VC_FRAME_HELP
	"\n"
	"Exit status: 0 ok, 1 usage error, 2 bad input or output failure.\n";

enum fmt { F_SVG, F_PNG, F_JSON, F_TEXT };

struct tl_args {
	ts_options o;
	tl_options tl;
	enum fmt fmt;
	const char *out;
	uint64_t top;
	double fdr;
};

static int parse_px(const char *opt, const char *arg, unsigned *out)
{
	uint64_t v;
	if (ap_cli_parse_u64(arg, &v) || v < 200 || v > 100000) {
		ap_cli_error("%s wants pixels from 200 to 100000, not '%s'", opt,
			     arg);
		return AP_EXIT_USAGE;
	}
	*out = (unsigned)v;
	return 0;
}

/* Parse argv into a; -1 to go on, else the exit status. */
static int parse(int argc, char **argv, struct tl_args *a)
{
	enum { O_SVG = VC_OPT_SERIES_END, O_PNG, O_JSON, O_TEXT, O_TOP,
	       O_TITLE, O_WIDTH, O_HEIGHT, O_FDR };
	static const struct option longopts[] = {
		VC_SERIES_LONGOPTS,
		{"svg", no_argument, NULL, O_SVG},
		{"png", no_argument, NULL, O_PNG},
		{"json", no_argument, NULL, O_JSON},
		{"text", no_argument, NULL, O_TEXT},
		{"top", required_argument, NULL, O_TOP},
		{"title", required_argument, NULL, O_TITLE},
		{"width", required_argument, NULL, O_WIDTH},
		{"height", required_argument, NULL, O_HEIGHT},
		{"fdr", required_argument, NULL, O_FDR},
		{"output", required_argument, NULL, 'o'},
		{NULL, 0, NULL, 0}};
	int c, rc;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		if (c == 'h' || c == VC_OPT_HELP) {
			fputs(timeline_usage, stdout);
			return AP_EXIT_OK;
		} else if (c >= O_SVG && c <= O_TEXT) {
			a->fmt = c == O_SVG ? F_SVG : c == O_PNG ? F_PNG
				 : c == O_JSON ? F_JSON : F_TEXT;
		} else if (c == 'o') {
			a->out = optarg;
		} else if (c == O_TITLE) {
			a->tl.title = optarg;
		} else if (c == O_WIDTH || c == O_HEIGHT) {
			if ((rc = parse_px(c == O_WIDTH ? "--width" : "--height",
					   optarg, c == O_WIDTH ? &a->tl.width
								: &a->tl.height)))
				return rc;
		} else if (c == O_TOP) {
			if (ap_cli_parse_u64(optarg, &a->top)) {
				ap_cli_error("--top needs a number >= 0, not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
		} else if (c == O_FDR) {
			if (ap_cli_parse_level(optarg, &a->fdr)) {
				ap_cli_error("--fdr wants a number strictly between "
					     "0 and 1, not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
		} else if ((rc = vc_series_option(c, optarg, &a->o)) < 0) {
			return vc_bad_option("timeline", argv);
		} else if (rc) {
			return rc;
		}
	}
	if (a->fmt == F_PNG && !a->out && isatty(STDOUT_FILENO)) {
		ap_cli_error("--png writes binary data: give -o FILE or redirect "
			     "standard output");
		return AP_EXIT_USAGE;
	}
	return -1;
}

/* The document in the chosen text format into a malloc'd buffer. */
static int render(const ts_series *s, const lk_result *lk, const tl_sel *sel,
		  const struct tl_args *a, char **buf, size_t *len)
{
	FILE *m = open_memstream(buf, len);
	if (!m)
		return -1;
	int rc = a->fmt == F_JSON   ? tl_write_json(s, lk, sel, m)
		 : a->fmt == F_TEXT ? tl_write_text(s, lk, sel, m)
				    : tl_write_svg(s, lk, sel, &a->tl, m);
	if (fclose(m))
		rc = -1;
	return rc;
}

/* Read all of fd into a malloc'd buffer. */
static int read_all(int fd, char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	for (ssize_t r = 1; b && r != 0;) {
		if (n == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb)
				break;
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0)
			n += (size_t)r;
		if (r == 0) {
			*out = b;
			*len = n;
			return 0;
		}
	}
	free(b);
	return -1;
}

/*
 * The SVG converted by rsvg-convert (a temporary file in, the PNG read
 * from its standard output). 0, or the exit status after a message.
 */
static int to_png(const char *svg, size_t len, char **png, size_t *pnglen)
{
	const char *dir = getenv("TMPDIR");
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s/allocprof-timeline.XXXXXX.svg",
		 dir && *dir ? dir : "/tmp");
	int fd = mkstemps(tmp, 4), pfd[2] = {-1, -1}, rc = AP_EXIT_INPUT;
	if (fd < 0 || ap_file_write_all(fd, svg, len) || close(fd)) {
		ap_cli_error("cannot write a temporary file for rsvg-convert: %s",
			     strerror(errno));
		if (fd >= 0)
			unlink(tmp);
		return AP_EXIT_INPUT;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	pid_t pid = -1;
	char prog[] = "rsvg-convert", fmt[] = "--format=png";
	char *argv[] = {prog, fmt, tmp, NULL};
	int err = pipe2(pfd, O_CLOEXEC) ? errno : 0;
	if (!err) {
		posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
		err = posix_spawnp(&pid, "rsvg-convert", &fa, NULL, argv, environ);
		close(pfd[1]);
	}
	posix_spawn_file_actions_destroy(&fa);
	if (err == ENOENT) {
		ap_cli_error("--png needs rsvg-convert, which is not installed "
			     "(Debian: apt-get install librsvg2-bin); --svg "
			     "works without it");
	} else if (err) {
		ap_cli_error("cannot run rsvg-convert: %s", strerror(err));
	} else {
		int st = 0, got = read_all(pfd[0], png, pnglen);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (got == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && *pnglen)
			rc = 0;
		else
			ap_cli_error("rsvg-convert failed to convert the SVG");
		if (rc && got == 0)
			free(*png);
	}
	if (pfd[0] >= 0)
		close(pfd[0]);
	unlink(tmp);
	return rc;
}

static int emit(const struct tl_args *a, const char *buf, size_t len)
{
	if (a->out ? ap_file_write_atomic(a->out, buf, len, 0644)
		   : ap_file_write_all(STDOUT_FILENO, buf, len)) {
		ap_cli_error("writing %s failed: %s",
			     a->out ? a->out : "standard output", strerror(errno));
		return AP_EXIT_INPUT;
	}
	return 0;
}

int ap_cmd_timeline(int argc, char **argv)
{
	struct tl_args a = {.fmt = F_SVG, .top = 8, .fdr = 0.05};
	ts_options_default(&a.o);
	int rc = parse(argc, argv, &a);
	if (rc >= 0)
		return rc;
	ts_series *s = NULL;
	if ((rc = vc_open_series("timeline", (const char *const *)argv + optind,
				 (size_t)(argc - optind), &a.o, &s)))
		return rc;
	lk_result lk;
	tl_sel sel;
	char err[256], *buf = NULL, *png = NULL;
	size_t len = 0, pnglen = 0;
	if (lk_analyse(s, a.fdr, &lk, err, sizeof err)) {
		ap_cli_error("%s", err);
		ts_series_free(s);
		return AP_EXIT_INPUT;
	}
	if (tl_select(s, &lk, a.top, &sel) || render(s, &lk, &sel, &a, &buf, &len)) {
		ap_cli_error("out of memory");
		rc = AP_EXIT_INPUT;
	} else if (a.fmt == F_PNG) {
		if (!(rc = to_png(buf, len, &png, &pnglen)))
			rc = emit(&a, png, pnglen);
	} else {
		rc = emit(&a, buf, len);
	}
	free(buf);
	free(png);
	tl_sel_free(&sel);
	lk_free(&lk);
	ts_series_free(s);
	return rc;
}
