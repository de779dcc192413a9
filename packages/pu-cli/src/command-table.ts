import type { CommandClass } from "./clipanion.js";

type CommandModule = { default: CommandClass };

/**
 * Command path → module, so `main` imports only the command it runs (start-up time is the
 * CLI's main cost). Adding a command or a whole group is one line per verb here.
 */
const COMMAND_TABLE: Readonly<Record<string, () => Promise<CommandModule>>> = {
  init: () => import("./commands/init.js"),
  spawn: () => import("./commands/spawn.js"),
  status: () => import("./commands/status.js"),
  kill: () => import("./commands/kill.js"),
  bench: () => import("./commands/bench.js"),
  play: () => import("./commands/play.js"),
  attach: () => import("./commands/attach.js"),
  dash: () => import("./commands/dash.js"),
  logs: () => import("./commands/logs.js"),
  send: () => import("./commands/send.js"),
  signal: () => import("./commands/signal.js"),
  diff: () => import("./commands/diff.js"),
  merge: () => import("./commands/merge.js"),
  clean: () => import("./commands/clean.js"),
  health: () => import("./commands/health.js"),
  trust: () => import("./commands/trust.js"),
  completion: () => import("./commands/completion.js"),
  "daemon start": () => import("./commands/daemon/start.js"),
  "daemon stop": () => import("./commands/daemon/stop.js"),
  "daemon stdio": () => import("./commands/daemon/stdio.js"),
  "daemon restart": () => import("./commands/daemon/restart.js"),
  "host add": () => import("./commands/host/add.js"),
  "host list": () => import("./commands/host/list.js"),
  "host check": () => import("./commands/host/check.js"),
  "host install": () => import("./commands/host/install.js"),
  "host remove": () => import("./commands/host/remove.js"),
  "daemon status": () => import("./commands/daemon/status.js"),
  "trigger list": () => import("./commands/trigger/list.js"),
  "trigger show": () => import("./commands/trigger/show.js"),
  "trigger create": () => import("./commands/trigger/create.js"),
  "trigger delete": () => import("./commands/trigger/delete.js"),
  "trigger assign": () => import("./commands/trigger/assign.js"),
  "trigger log": () => import("./commands/trigger/log.js"),
  "prompt list": () => import("./commands/prompt/list.js"),
  "prompt show": () => import("./commands/prompt/show.js"),
  "prompt create": () => import("./commands/prompt/create.js"),
  "prompt delete": () => import("./commands/prompt/delete.js"),
  "agent list": () => import("./commands/agent/list.js"),
  "agent show": () => import("./commands/agent/show.js"),
  "agent create": () => import("./commands/agent/create.js"),
  "agent delete": () => import("./commands/agent/delete.js"),
  "swarm list": () => import("./commands/swarm/list.js"),
  "swarm show": () => import("./commands/swarm/show.js"),
  "swarm create": () => import("./commands/swarm/create.js"),
  "swarm delete": () => import("./commands/swarm/delete.js"),
  "swarm run": () => import("./commands/swarm/run.js"),
  "schedule list": () => import("./commands/schedule/list.js"),
  "schedule show": () => import("./commands/schedule/show.js"),
  "schedule create": () => import("./commands/schedule/create.js"),
  "schedule delete": () => import("./commands/schedule/delete.js"),
  "schedule enable": () => import("./commands/schedule/enable.js"),
  "schedule disable": () => import("./commands/schedule/disable.js"),
  "group run": () => import("./commands/group/run.js"),
  "group list": () => import("./commands/group/list.js"),
  "group status": () => import("./commands/group/status.js"),
  "group compare": () => import("./commands/group/compare.js"),
  "group diff": () => import("./commands/group/diff.js"),
  "group pick": () => import("./commands/group/pick.js"),
  "group cancel": () => import("./commands/group/cancel.js"),
  "plan start": () => import("./commands/plan/start.js"),
  "plan list": () => import("./commands/plan/list.js"),
  "plan status": () => import("./commands/plan/status.js"),
  "plan show": () => import("./commands/plan/show.js"),
  "plan approve": () => import("./commands/plan/approve.js"),
  "plan run": () => import("./commands/plan/run.js"),
  "plan cancel": () => import("./commands/plan/cancel.js"),
  "plan evidence": () => import("./commands/plan/evidence.js"),
  "plan check": () => import("./commands/plan/check.js"),
  "plan merge": () => import("./commands/plan/merge.js"),
  "ticket create": () => import("./commands/ticket/create.js"),
  "ticket list": () => import("./commands/ticket/list.js"),
  "ticket show": () => import("./commands/ticket/show.js"),
  "ticket cancel": () => import("./commands/ticket/cancel.js"),
  queue: () => import("./commands/queue.js"),
  "queue show": () => import("./commands/queue/show.js"),
  "queue pause": () => import("./commands/queue/pause.js"),
  "queue resume": () => import("./commands/queue/resume.js"),
  "queue collection": () => import("./commands/queue/collection.js"),
  review: () => import("./commands/review.js"),
  "review list": () => import("./commands/review/list.js"),
  "review approve": () => import("./commands/review/approve.js"),
  "review reject": () => import("./commands/review/reject.js"),
  stats: () => import("./commands/stats.js"),
  "stats show": () => import("./commands/stats/show.js"),
  "stats prefer": () => import("./commands/stats/prefer.js"),
  usage: () => import("./commands/usage.js"),
  budget: () => import("./commands/budget.js"),
  web: () => import("./commands/web.js"),
  "web stop": () => import("./commands/web/stop.js"),
  "gate pre-commit": () => import("./commands/gate/pre-commit.js"),
  "gate pre-push": () => import("./commands/gate/pre-push.js"),
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
