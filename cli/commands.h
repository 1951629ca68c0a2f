/* commands.h - one entry point per subcommand, each in its own cli/cmd_NAME.c.
 * Declared weak so that a build holds exactly the subcommands whose files it has:
 * main.c lists and dispatches only those that are linked in. Each takes the
 * subcommand's own argv (argv[0] is the subcommand name) and returns an exit code. */
#ifndef OD_CLI_COMMANDS_H
#define OD_CLI_COMMANDS_H

#define OD_CMD(name) int od_cmd_##name(int argc, char **argv) __attribute__((weak))
OD_CMD(snapshot);
OD_CMD(replay);
OD_CMD(plan);
OD_CMD(triage);
OD_CMD(trend);
OD_CMD(doctor);
OD_CMD(diff);
OD_CMD(watch);
OD_CMD(gpus);
OD_CMD(report);
OD_CMD(profile);
#undef OD_CMD

#endif
