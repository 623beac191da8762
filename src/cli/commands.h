/*
 * commands.h: the allocprof subcommands. Each lives in its own cmd_NAME.c and
 * is declared weak here, so main.c can list every command and say plainly
 * which ones this build lacks instead of failing to link.
 *
 * Contract for every command: argv[0] is the subcommand name; return the
 * process exit status: 0 ok, 1 usage error, 2 bad input (files, data).
 * Every command accepts --help (print usage to stdout, exit 0).
 */
#ifndef ALLOCPROF_CLI_COMMANDS_H
#define ALLOCPROF_CLI_COMMANDS_H

#define AP_CMD(name) int ap_cmd_##name(int argc, char **argv) __attribute__((weak))
AP_CMD(run);
AP_CMD(report);
AP_CMD(diff);
AP_CMD(merge);
AP_CMD(flame);
AP_CMD(folded);
AP_CMD(convert);
AP_CMD(hist);
AP_CMD(ci);
#undef AP_CMD

#endif
