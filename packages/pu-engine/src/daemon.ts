import fs from "node:fs";
import { isPuError, PuError } from "@pu/core/errors";
import { ensurePuHome, logPath, pidPath, projectsPath, puHome, socketPath } from "@pu/core/paths";
import { DAEMON_VERSION, PROTOCOL_VERSION } from "@pu/ipc/protocol";
import { createServer, type IpcServer } from "@pu/ipc/server";
import { openDaemonLog, type DaemonLog } from "./daemon-log.js";
import { createHandlers } from "./handlers.js";
import { AgentService } from "./agents/agent-service.js";
import { stopAgents } from "./agents/stop.js";
import { WorktreeService } from "./worktrees/worktree-service.js";
import { isAlive } from "./process-info.js";
import { ProjectRegistry } from "./projects.js";
import { GroupService } from "./orchestration/groups/group-service.js";
import { PlanService } from "./orchestration/plans/plan-service.js";
import { recoverProjects } from "./recovery.js";
import { EngineState } from "./state.js";
import { StatusWatch } from "./status-watch.js";
import { UsageService } from "./usage/usage-service.js";
import { ownedWorkIn } from "./services.js";
import { QueueService } from "./orchestration/queue/queue-service.js";
import { Scheduler } from "./automation/schedules.js";
import { TriggerRunner } from "./automation/triggers.js";
import { OperatorStateStore, operatorStatePath } from "./orchestration/queue/state-store.js";
import { SlotLedger } from "./orchestration/slots.js";
import { AutomationService } from "./automation/automation-service.js";
import { DaemonService } from "./daemon-service.js";
import { HostLinks } from "./hosts/host-links.js";
import { HostMembers } from "./hosts/host-members.js";
import { HostService } from "./hosts/host-service.js";
import { RemoteAgentService } from "./hosts/remote-agents.js";

/** How long a stopping agent gets between SIGTERM and SIGKILL. */
export const STOP_GRACE_MS = 5000;

export interface Daemon {
  readonly home: string;
  readonly state: EngineState;
  /** Replies are already sent; stops accepting, stops agents (recorded as suspended), removes pid + socket. */
  stop(reason?: string): Promise<void>;
  /** Settles when the daemon has fully stopped. */
  readonly stopped: Promise<void>;
}

/** Reads `/proc/<pid>/cmdline`: is this process a pu daemon (and not some process that got a reused pid)? */
function isPuEngineProcess(pid: number): boolean {
  if (!isAlive(pid)) return false;
  let cmdline: string;
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    // No /proc to ask: a live pid is assumed to be the daemon rather than risk two.
    return true;
  }
  return cmdline.split("\0").some((arg) => arg.includes("pu-engine"));
}

function readPidFile(file: string): { text: string; pid: number | null } | null {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  const pid = Number.parseInt(text.trim(), 10);
  return { text, pid: Number.isInteger(pid) && pid > 0 ? pid : null };
}

/**
 * Creates `daemon.pid` exclusively. A pid file naming a live pu-engine means another
 * daemon owns this home; one naming a dead process (or a reused pid) is stale and replaced.
 */
function acquirePidFile(home: string): string {
  const file = pidPath(home);
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = fs.openSync(file, "wx", 0o600);
      try {
        fs.writeSync(fd, `${process.pid}\n`);
      } finally {
        fs.closeSync(fd);
      }
      return file;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = readPidFile(file);
    if (holder === null) continue; // removed meanwhile: try again
    if (holder.pid !== null && holder.pid !== process.pid && isPuEngineProcess(holder.pid)) {
      throw new PuError(
        "INVALID_STATE",
        `a pu daemon is already running for ${home} (pid ${holder.pid}); stop it with \`pu daemon stop\` first`,
      );
    }
    // Stale. Unlink only if it still holds what we judged, so a daemon that just won the race keeps its file.
    const again = readPidFile(file);
    if (again !== null && again.text === holder.text) fs.rmSync(file, { force: true });
  }
  throw new PuError("INVALID_STATE", `could not take ${file}: another daemon keeps starting for ${home}`);
}

function removeIfOurs(file: string): void {
  try {
    if (readPidFile(file)?.pid === process.pid) fs.rmSync(file, { force: true });
  } catch {
    // best effort on the way out
  }
}

export async function startDaemon({ home }: { home: string }): Promise<Daemon> {
  await ensurePuHome(home);
  const pidFile = acquirePidFile(home);
  let log: DaemonLog | undefined;
  let server: IpcServer | undefined;
  const sock = socketPath(home);
  let state: EngineState;
  let statusWatch: StatusWatch;
  let triggers: TriggerRunner | undefined;
  let scheduler: Scheduler | undefined;
  let plans: PlanService | undefined;
  let queue: QueueService | undefined;
  let groups: GroupService | undefined;
  let hostLinks: HostLinks | undefined;
  let usageService: UsageService | undefined;
  try {
    log = openDaemonLog(logPath(home));
    log.event("start", { home, daemonVersion: DAEMON_VERSION, protocolVersion: PROTOCOL_VERSION, node: process.version });
    const projects = new ProjectRegistry(projectsPath(home));
    const loaded = await projects.load();
    if (loaded.problem) log.event("projects_unreadable", { problem: loaded.problem });
    state = new EngineState(home, projects, log);
    // The services listen on state.events; each is built here with what it needs.
    statusWatch = new StatusWatch(state);
    // Before accepting connections: nobody may see (or act on) a manifest recovery has not reconciled.
    await recoverProjects(state);
    triggers = new TriggerRunner(state);
    triggers.start();
    // state.json: the queue and the groups both record in it, through the one store.
    const operatorState = new OperatorStateStore(operatorStatePath(home));
    // Hosts: this daemon is the control plane; agents it placed elsewhere are routed by id.
    const hostService = new HostService(home, log);
    hostLinks = new HostLinks(log, home);
    const remote = new RemoteAgentService(home, hostService, hostLinks, log);
    await remote.load();
    // One ledger of launch capacity: tickets, group members and plan workers all count against it
    // (members placed on hosts against each host's --max-agents).
    const slots = new SlotLedger(state, operatorState, async (name) => (await hostService.list()).find((h) => h.name === name)?.maxAgents);
    // Group members wait in the ledger's line for slots; the queue's group steps run through the groups.
    // Usage: read from the agent CLIs' records; budgets of tickets, steps and groups are counted on their agents.
    const usage = new UsageService(state, log);
    usageService = usage;
    // Group members and plan workers placed on hosts run there as groups of one, through the same HostMembers.
    const hostMembers = new HostMembers(hostService, hostLinks, remote, log);
    groups = new GroupService(state, operatorState, slots, usage, hostMembers);
    const groupService = groups;
    const workQueue = new QueueService(state, operatorState, slots, groupService, usage, hostMembers);
    queue = workQueue;
    await workQueue.load();
    // Plan workers take the same slots and wait while automatic work is paused.
    plans = new PlanService(state, slots, usage, hostMembers);
    const planService = plans;
    // Each status report carries every agent's figures (and, below, the hosts' agents).
    // A group's or plan's budget counts its members and workers on hosts, as the hosts report them.
    usage.setElsewhere(async (root, owner) => {
      const placed =
        owner.kind === "group" ? groupService.hostAgents(root, owner.id) : owner.kind === "plan" ? await planService.hostAgents(root, owner.id) : workQueue.hostAgents(root, owner.id);
      return placed.length === 0 ? [] : hostMembers.usageOf(root, placed);
    });
    usage.setOwnerLookup((root, agentId) => {
      const owner = ownedWorkIn({ queue: workQueue, groups: groupService, plans: planService }, root).agent(agentId);
      return owner ? { kind: owner.kind, id: owner.id } : undefined;
    });
    usage.onChange((root) => statusWatch!.externalChange(root, []));
    usage.onDailyBudgetSpent((root, message) => void workQueue.budgetSpent(root, message).catch((error) => log!.event("queue_pause_failed", { projectRoot: root, error })));
    usage.start();
    // Status streams carry the hosts' agents too, and hear when a host's report changes.
    statusWatch.setOverlay((report) => usage.decorate(remote.overlay(report)), (root) => usage.prepare(root));
    remote.onChange((root, changes) => statusWatch!.externalChange(root, changes));
    // Made before the handlers, which list an untrusted schedule's next run as it keeps it; started below.
    const schedules = new Scheduler(state, () => workQueue.paused);
    scheduler = schedules;
    // We hold the pid file, so any socket file is a leftover of a dead daemon.
    fs.rmSync(sock, { force: true });
    const daemonLog = log;
    server = createServer({
      socketPath: sock,
      handlers: createHandlers({ state, agents: new AgentService(state), worktrees: new WorktreeService(state), automation: new AutomationService(state, (file) => schedules.untrustedNextRun(file)), daemon: new DaemonService(state), statusWatch, queue: workQueue, plans: planService, groups: groupService, hosts: hostService, remote, usage }),
      log: (event: string, fields?: Record<string, unknown>) => daemonLog.event(event, fields),
    });
    await server.listen();
    fs.chmodSync(sock, 0o600);
    // Only a first look: runs that fell due while no daemon ran are counted as missed, not fired.
    await schedules.start();
    // In-progress tickets continue (agents resumed or re-prompted), then queued ones dispatch.
    // First, so no group's slot request runs a dispatch pass before the tickets in flight are known.
    await workQueue.start();
    // Unfinished groups go on: pending launches line up again, interrupted members restart in their worktrees.
    groups.start();
    // Unfinished plan sessions go on from their phase (a killed daemon's workers are re-prompted).
    await plans.resumeAll();
  } catch (err) {
    log?.event("start_failed", { error: err });
    queue?.stop();
    groups?.stop();
    scheduler?.stop();
    triggers?.stop();
    await hostLinks?.closeAll();
    await server?.close().catch(() => undefined);
    log?.close();
    removeIfOurs(pidFile);
    throw err;
  }

  const activeServer = server;
  const activeQueue = queue;
  const activeLog = log;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  let stopping: Promise<void> | undefined;

  const onSignal = (signal: NodeJS.Signals) => void daemon.stop(signal);
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  // A PTY master closing under us must not end the daemon.
  process.on("SIGHUP", () => undefined);

  const daemon: Daemon = {
    home,
    state,
    stopped,
    stop(reason = "request") {
      stopping ??= (async () => {
        state.stopping = true;
        // First: the agents stopped below must not read as tickets failing.
        activeQueue.stop();
        groups?.stop();
        scheduler?.stop();
        triggers?.stop();
        await hostLinks?.closeAll();
        plans?.dispose();
        activeLog.event("shutdown_begin", { reason });
        // Queued ahead of the close, so each stream's last frame says why it ends.
        for (const notice of state.shutdownNotices) notice();
        try {
          await activeServer.close();
        } catch (err) {
          activeLog.event("server_close_failed", { error: err });
        }
        const result = await stopAgents([...state.sessions.values()], "shutdown", STOP_GRACE_MS);
        // After the agents: their CLIs' last records are read and kept.
        await usageService?.stop();
        statusWatch.dispose();
        for (const live of state.sessions.values()) live.session.dispose();
        state.sessions.clear();
        fs.rmSync(sock, { force: true });
        removeIfOurs(pidFile);
        process.off("SIGTERM", onSignal);
        process.off("SIGINT", onSignal);
        activeLog.event("shutdown", { reason, suspended: result.stopped.map((s) => s.agentId) });
        activeLog.close();
        resolveStopped();
      })();
      return stopping;
    },
  };
  state.requestShutdown = () => {
    // Let the reply to `shutdown` leave before the server closes.
    setTimeout(() => void daemon.stop("shutdown request"), 20);
  };
  log.event("listening", { socket: sock, recoveredProjects: state.projects.list().length });
  return daemon;
}

function parseArgs(argv: string[]): { home?: string } {
  const out: { home?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--home") {
      const value = argv[++i];
      if (!value) throw new PuError("INVALID_ARGUMENT", "--home needs a directory");
      out.home = value;
    } else if (arg.startsWith("--home=")) {
      out.home = arg.slice("--home=".length);
    } else {
      throw new PuError("INVALID_ARGUMENT", `unknown argument ${arg} (usage: pu-engine [--home DIR])`);
    }
  }
  return out;
}

/** Entry point of `bin/pu-engine`: runs until shutdown, then exits the process. */
export async function runDaemonFromArgv(argv: string[]): Promise<void> {
  let daemon: Daemon;
  try {
    const args = parseArgs(argv);
    const home = args.home ?? puHome(process.env);
    // Children (agents) must see the same home as the daemon that owns them.
    process.env.PU_HOME = home;
    daemon = await startDaemon({ home });
  } catch (err) {
    const message = isPuError(err) || err instanceof Error ? err.message : String(err);
    process.stderr.write(`pu-engine: ${message}\n`);
    process.exit(1);
  }
  // One bad request (or a stray callback) must not take every agent down with it.
  process.on("uncaughtException", (err) => daemon.state.log.event("uncaught_exception", { error: err }));
  process.on("unhandledRejection", (err) => daemon.state.log.event("unhandled_rejection", { error: err }));
  await daemon.stopped;
  process.exit(0);
}
