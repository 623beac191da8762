/*
 * main.c: the allocprof command's entry point; dispatches to subcommands.
 */
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"

struct command {
	const char *name;
	int (*fn)(int, char **);
	const char *summary;
};

static const struct command commands[] = {
	{"run", ap_cmd_run, "run a program under the heap profiler"},
	{"report", ap_cmd_report, "top allocation sites with confidence intervals"},
	{"diff", ap_cmd_diff, "per-site change between two profiles"},
	{"merge", ap_cmd_merge, "merge profiles (unbias, then sum)"},
	{"flame", ap_cmd_flame, "interactive SVG flame graph"},
	{"folded", ap_cmd_folded, "folded stacks for FlameGraph/speedscope"},
	{"convert", ap_cmd_convert, "convert between pprof, heap_v2, folded, json"},
	{"hist", ap_cmd_hist, "log-linear histogram of numbers on stdin"},
	{"ci", ap_cmd_ci, "confidence interval for sampled bytes"},
	{"leaks", ap_cmd_leaks, "sites whose live bytes keep growing (FDR)"},
	{"timeline", ap_cmd_timeline, "live bytes over time by site (SVG)"},
	{"tune", ap_cmd_tune, "per-size-class sampling rates from training profiles"},
	{"attach", ap_cmd_attach, "profile a running process (ptrace)"},
	{"detach", ap_cmd_detach, "end an attach: final profile, sampling off"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: allocprof COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'allocprof COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	ap_cli_set_progname("allocprof");
	if (argc < 2) {
		usage(stderr);
		return AP_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return AP_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("allocprof %s\n", AP_VERSION_STRING);
		return AP_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		ap_cli_set_progname(commands[i].name);
		return commands[i].fn(argc - 1, argv + 1);
	}
	ap_cli_error("unknown command '%s' (try 'allocprof --help')", argv[1]);
	return AP_EXIT_USAGE;
}
