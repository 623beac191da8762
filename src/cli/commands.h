/*
 * commands.h: the allocprof subcommands. Each lives in its own cmd_NAME.c;
 * every one is always built, so a command that is renamed or missing fails
 * the link instead of the user at run time.
 *
 * Contract for every command: argv[0] is the subcommand name; return the
 * process exit status: 0 ok, 1 usage error, 2 bad input (files, data).
 * Every command accepts --help (print usage to stdout, exit 0).
 */
#ifndef ALLOCPROF_CLI_COMMANDS_H
#define ALLOCPROF_CLI_COMMANDS_H

#define AP_CMD(name) int ap_cmd_##name(int argc, char **argv)
AP_CMD(run);
AP_CMD(report);
AP_CMD(diff);
AP_CMD(merge);
AP_CMD(flame);
AP_CMD(folded);
AP_CMD(convert);
AP_CMD(hist);
AP_CMD(ci);
AP_CMD(leaks);
AP_CMD(timeline);
AP_CMD(tune);
AP_CMD(attach);
AP_CMD(detach);
#undef AP_CMD

#endif
