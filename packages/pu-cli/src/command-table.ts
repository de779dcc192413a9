import type { CommandClass } from "./clipanion.js";

type CommandModule = { default: CommandClass };

/**
 * Command path → module, so `main` imports only the command it runs (start-up time is the
 * CLI's main cost). Adding a command or a whole group is one line per verb here.
 */
export const COMMAND_TABLE: Readonly<Record<string, () => Promise<CommandModule>>> = {
  init: () => import("./commands/init.js"),
  spawn: () => import("./commands/spawn.js"),
  status: () => import("./commands/status.js"),
  kill: () => import("./commands/kill.js"),
  bench: () => import("./commands/bench.js"),
  play: () => import("./commands/play.js"),
  attach: () => import("./commands/attach.js"),
  logs: () => import("./commands/logs.js"),
  send: () => import("./commands/send.js"),
  diff: () => import("./commands/diff.js"),
  merge: () => import("./commands/merge.js"),
  clean: () => import("./commands/clean.js"),
  health: () => import("./commands/health.js"),
  "daemon start": () => import("./commands/daemon/start.js"),
  "daemon stop": () => import("./commands/daemon/stop.js"),
  "daemon restart": () => import("./commands/daemon/restart.js"),
  "daemon status": () => import("./commands/daemon/status.js"),
};

/** The table key `argv` starts with (the longest match), if any. */
export function matchCommandPath(argv: readonly string[]): string | undefined {
  const two = argv.slice(0, 2).join(" ");
  if (argv.length >= 2 && two in COMMAND_TABLE) return two;
  const one = argv[0];
  if (one !== undefined && one in COMMAND_TABLE) return one;
  return undefined;
}

export async function loadCommands(paths: readonly string[]): Promise<CommandClass[]> {
  const modules = await Promise.all(paths.map((p) => COMMAND_TABLE[p]!()));
  return modules.map((m) => m.default);
}

export const ALL_COMMAND_PATHS: readonly string[] = Object.keys(COMMAND_TABLE);

/** A group word such as "daemon" when `argv` names a group but none of its commands. */
export function matchCommandGroup(argv: readonly string[]): string | undefined {
  const first = argv[0];
  return first !== undefined && ALL_COMMAND_PATHS.some((p) => p.startsWith(`${first} `)) ? first : undefined;
}
