// Agents this control plane placed on hosts. A project placed on a host has a mirror there (the
// base branch pushed with git's own protocol over the host's transport); the host's daemon runs
// the agents and worktrees in it exactly as this one would. Here: which ids live where
// (`$PU_HOME/remote-projects.json`, this daemon its only writer), the host's last report of each
// mirror (what status shows while the host is unreachable), requests routed by id, attach relayed
// over a bridge of its own, and merge / clean, which fetch the worktree's branch back first.
import { loadConfig } from "@pu/core/config";
import { PuError, isPuError } from "@pu/core/errors";
import { FileWitness } from "@pu/core/file-witness";
import { nameFromPrompt, normalizeWorktreeName, refuseControlCharacters } from "@pu/core/names";
import { isAlive } from "@pu/core/status";
import { hostMirrorPath, hostsFilePath, type HostRecord } from "@pu/core/hosts-file";
import type { RemoteProject } from "@pu/core/remote-projects-file";
import type { AgentView, HostLinkView, AttachResult, CleanResult, MergeResult, RequestFields, RequestOf, ResultOf, SpawnResult, StatusReport, UsageGrouping, UsageResult, WorktreeView } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { DaemonLog } from "../daemon-log.js";
import type { AgentStatusChange } from "../engine-events.js";
import { branchExists, currentBranch } from "../git/runner.js";
import type { HostLinks } from "./host-links.js";
import { RemoteViewers } from "./remote-viewers.js";
import type { HostService } from "./host-service.js";
import { addHostAgents, agentStatuses, placementKey as keyOf, statusChanges, unrecordedSince, withSpawned, type HeardReport } from "./remote-status.js";
import { RemoteProjectsRecord } from "./remote-projects-record.js";
import { RemoteWatches } from "./remote-watches.js";
import { dropMergedBranch, fetchBranchBack, hostTrustError, mergeFetchedBack, pushBase, readEnvFiles, withDeadline, workNotHere } from "./project-mirror.js";

/** A host's status answer is waited for this long before its agents are shown as last known (within the CLI's own 5 s for status). */
const STATUS_TIMEOUT_MS = 3000;
/** Keys, text, logs and signals routed to a host: answered within the CLI's default request time. */
const QUICK_REQUEST_MS = 4500;

const PERSIST_EVERY_MS = 5000;
/**
 * While a status stream is open, hosts.json and remote-projects.json are stat'ed this often (two
 * stats, no read) and read again only when one changed, so a problem line comes and goes on its own.
 */
const FILES_LOOK_MS = 1500;

/** A spawn failing with these may still have started the agent on the host (the answer never came). */
const ANSWER_LOST = ["DAEMON_UNAVAILABLE", "TIMEOUT", "PROTOCOL_MISMATCH"];


export type PlacedProject = RemoteProject;

export interface RemoteReport {
  project: PlacedProject;
  report: StatusReport | null;
  reachable: boolean;
  seenAt: string | null;
}

type ProjectRequest = "kill" | "suspend" | "resume" | "rename" | "diff" | "budget";

export class RemoteAgentService {
  private readonly placements: RemoteProjectsRecord;
  /** What this daemon last heard from each placement (host + project), and whether the host answered. */
  private readonly seen = new Map<string, HeardReport>();
  private readonly watches: RemoteWatches;
  private readonly changeListeners: ((projectRoot: string, changes: AgentStatusChange[]) => void)[] = [];
  private readonly persistTimers = new Map<string, NodeJS.Timeout>();
  /** Spawns this daemon is waiting for (placement key and when asked): the others a report may settle. */
  private readonly spawnsInFlight = new Set<string>();
  private readonly viewers: RemoteViewers;
  /** Why hosts.json could not be read at the last status (null: it could). */
  private hostsProblem: string | null = null;
  /** Per placement, why its host's report could not be asked for other than the link (no such host…). */
  private readonly reportProblems = new Map<string, string>();
  /** hosts.json as last read for a status (`checkFiles`). */
  private readonly hostsVersion = new FileWitness();
  private readonly hostsFile: string;
  /** The next look at the files while a status stream is open (`lookSoon`). */
  private lookTimer: NodeJS.Timeout | undefined;

  constructor(
    home: string,
    private readonly hosts: HostService,
    private readonly links: HostLinks,
    private readonly log: DaemonLog,
  ) {
    this.placements = new RemoteProjectsRecord(home);
    this.hostsFile = hostsFilePath(home);
    this.viewers = new RemoteViewers(hosts, links);
    this.watches = new RemoteWatches(hosts, links, log, {
      projectsOf: (root) => this.projectsOf(root),
      heard: (project, report, reachable) => this.heard(project, report, reachable),
      lastReport: (project) => this.lastReport(project),
    });
  }

  /**
   * Reads the record at start; a corrupt file routes nothing and is never overwritten: it is kept
   * as a problem that status and host list say in one line, and `pu host remove` is refused.
   */
  async load(): Promise<void> {
    try {
      await this.placements.load();
    } catch (error) {
      this.log.event("remote_projects_unreadable", { error: (error as Error).message });
    }
  }

  /** The record's problem as a person reads it, or null when the placements are readable. */
  placementsProblem(): string | null {
    const problem = this.placements.problem;
    return problem === null ? null : `agents placed on hosts are not shown or reached (the file is left as it is; fix it): ${problem}`;
  }

  /** Problems that hide or age what status shows of this project's hosts, one line each. */
  problems(projectRoot: string): string[] {
    const out: string[] = [];
    const placements = this.placementsProblem();
    if (placements) out.push(placements);
    if (this.hostsProblem) out.push(`agents on hosts are shown as last known: ${this.hostsProblem}`);
    for (const project of this.projectsOf(projectRoot)) {
      const problem = this.reportProblems.get(keyOf(project));
      if (problem) out.push(`agents on host ${project.host} are shown as last known: ${problem}`);
    }
    return out;
  }

  /**
   * Before a status or host list: the record read again if it was unreadable or changed on disk,
   * hosts.json checked.
   */
  private async checkFiles(): Promise<void> {
    await this.placements.reloadIfChanged();
    await this.hostsVersion.note(this.hostsFile);
    try {
      await this.hosts.list();
      this.hostsProblem = null;
    } catch (error) {
      this.hostsProblem = (error as Error).message;
    }
  }

  placedAgent(agentId: string): PlacedProject | undefined {
    return this.placements.projects.find((p) => p.agentIds.includes(agentId));
  }

  placedWorktree(worktreeId: string): PlacedProject | undefined {
    return this.placements.projects.find((p) => p.worktreeIds.includes(worktreeId));
  }

  /** The placement an id (agent or worktree) belongs to. */
  placed(id: string): PlacedProject | undefined {
    return this.placedAgent(id) ?? this.placedWorktree(id);
  }

  /**
   * Where a request about one id goes: the placement on a host holding it (as an agent, a
   * worktree or either), or undefined for this machine. A record that could not be read is read
   * again first: a person may have fixed it since.
   */
  async route(id: string, kind: "agent" | "worktree" | "either"): Promise<PlacedProject | undefined> {
    await this.placements.retryIfUnreadable();
    return kind === "agent" ? this.placedAgent(id) : kind === "worktree" ? this.placedWorktree(id) : this.placed(id);
  }

  /**
   * This machine's answer about an id `route` placed on no host. While remote-projects.json
   * cannot be read pu cannot tell whether the id is on a host, so "no agent X" would not be
   * true: an id not found here fails with the file's problem instead (CONFIG_ERROR or
   * IO_ERROR, exit 1), in one line naming the file.
   */
  async here<T>(id: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      const problem = this.placements.problem;
      if (problem === null || !isPuError(error) || (error.code !== "AGENT_NOT_FOUND" && error.code !== "WORKTREE_NOT_FOUND")) throw error;
      throw new PuError(
        this.placements.problemCode,
        `cannot read remote-projects.json, so pu cannot tell whether ${id} (not on this machine) is placed on a host: ${problem}; fix the file (pu leaves it as it is) and try again`,
        { cause: error },
      );
    }
  }

  /**
   * For a request about every agent or worktree of a project (kill all, bench --all, diff,
   * clean --all): while remote-projects.json cannot be read (read again first) pu does not know
   * what it placed on hosts, so this machine's are acted on and the reply carries this one line
   * (`problems`) saying that those on hosts were not — `what`, e.g. "agents on hosts were not
   * killed". Empty when the file could be read.
   */
  async unreadPlacements(what: string): Promise<string[]> {
    await this.placements.retryIfUnreadable();
    const problem = this.placements.problem;
    if (problem === null) return [];
    return [`${what} (only this machine's were): pu cannot read remote-projects.json, so it does not know what it placed on hosts (the file is left as it is; fix it and run this again): ${problem}`];
  }

  projectsOf(projectRoot: string): PlacedProject[] {
    return this.placements.projects.filter((p) => p.projectRoot === projectRoot);
  }

  /**
   * The link to a host as `pu host list` shows it; a host holding agents is asked first (bounded),
   * so the state and the count of running agents are current, not whatever was seen last.
   */
  async linkView(host: HostRecord): Promise<HostLinkView> {
    await this.placements.retryIfUnreadable();
    if (this.placements.projects.some((p) => p.host === host.name)) await this.refreshHost(host.name);
    const { state, since, reason } = this.links.state(host.name);
    return { state, since, reason, agents: this.holdings(host.name).agents };
  }

  /** Every project placed on the host asked for its report now (bounded), before a decision about the host. */
  async refreshHost(host: string): Promise<void> {
    await this.placements.retryIfUnreadable();
    const roots = new Set(this.placements.projects.filter((p) => p.host === host).map((p) => p.projectRoot));
    await Promise.all([...roots].map((root) => this.reports(root)));
  }

  /**
   * What pu holds on a host, from the last reports: agents not known to have ended (an agent the
   * host never reported counts) and worktrees not merged here. `pu host remove` refuses while any.
   */
  holdings(host: string): { agents: number; worktrees: number } {
    let agents = 0;
    let worktrees = 0;
    for (const p of this.placements.projects.filter((x) => x.host === host)) {
      const statusOf = agentStatuses(this.lastReport(p));
      agents += p.agentIds.filter((id) => {
        const status = statusOf.get(id);
        return status === undefined || isAlive(status);
      }).length;
      worktrees += p.worktreeIds.filter((id) => !p.merged.includes(id)).length;
    }
    return { agents, worktrees };
  }

  async forgetHost(host: string): Promise<void> {
    await this.placements.change((file) => ({ ...file, projects: file.projects.filter((p) => p.host !== host) }));
    this.links.forget(host);
  }

  /** `pu spawn --on HOST`: the base pushed to the host's mirror, then the host daemon's own spawn there. */
  async spawn(projectRoot: string, hostName: string, fields: Omit<RequestFields<"spawn">, "projectRoot" | "on">): Promise<SpawnResult> {
    const host = await this.hosts.get(hostName);
    if (host.maxAgents !== null) {
      // The host's cap (`--max-agents`) protects that machine: counted from its fresh reports.
      await this.refreshHost(host.name);
      const running = this.holdings(host.name).agents;
      if (running >= host.maxAgents) {
        throw new PuError("INVALID_STATE", `host ${host.name} runs ${running} agent(s) pu placed there, its cap (--max-agents ${host.maxAgents}); kill one there first, or re-add the host with a higher cap`);
      }
    }
    const baseBranch = fields.base ?? (await currentBranch(projectRoot));
    if (!baseBranch) throw new PuError("INVALID_STATE", `${projectRoot} is on a detached HEAD; check out a branch (or pass --base) to place an agent on ${hostName}`);
    const mirror = await this.prepareMirror(host, projectRoot, baseBranch);
    // The project's env files are not in git: sent along, written into the host's new worktree before the agent starts.
    const newWorktree = !fields.root && fields.worktree === undefined;
    const envFiles = newWorktree ? await readEnvFiles(projectRoot) : { files: [], notes: [] };
    const request = {
      ...fields,
      ...(newWorktree ? { name: await nameFreeHere(projectRoot, fields) } : {}),
      base: baseBranch,
      projectRoot: mirror,
      ...(envFiles.files.length > 0 ? { files: envFiles.files } : {}),
    };
    // Written before the host is asked: if this daemon dies before the answer is recorded (or
    // the answer never comes), the agent the host started is adopted from its next report.
    const askedAt = new Date().toISOString();
    const placement = { host: host.name, projectRoot };
    const inFlight = `${keyOf(placement)}\0${askedAt}`;
    await this.placements.changeOrAddProject(host, projectRoot, baseBranch, (project) => {
      project.spawning = [...project.spawning, askedAt];
    });
    this.spawnsInFlight.add(inFlight);
    let result: SpawnResult;
    try {
      let sent: SpawnResult;
      try {
        sent = await this.links.request(host, "spawn", request, { timeoutMs: 120_000 });
      } catch (error) {
        // An answer that was lost (the link, the time) leaves the ask for the host's next report to
        // settle; a refusal from the host started nothing, so the ask goes.
        if (!isPuError(error) || !ANSWER_LOST.includes(error.code)) {
          await this.placements.changeProject(placement, (found) => {
            found.spawning = found.spawning.filter((at) => at !== askedAt);
          }).catch(() => undefined);
        }
        throw hostTrustError(host.name, error);
      }
      result = { ...sent, warnings: [...envFiles.notes, ...sent.warnings] };
      const placed = result;
      await this.placements.changeProject(placement, (found) => {
        found.baseBranch = baseBranch;
        routeIds(found, placed);
        found.spawning = found.spawning.filter((at) => at !== askedAt);
        // The answer is what is known of the agent until the host reports it: kept as heard, so
        // a link that drops before the next report still shows it (as last known), here and after a restart.
        found.lastReport = withSpawned(found.lastReport as StatusReport | null, found.mirror, placed) as unknown as Record<string, unknown>;
      });
      const heard = this.seen.get(keyOf(placement));
      if (heard) heard.report = withSpawned(heard.report, mirror, placed);
    } finally {
      this.spawnsInFlight.delete(inFlight);
    }
    this.watches.start(projectRoot);
    this.log.event("remote_spawned", { host: host.name, projectRoot, agentId: result.agentId, worktreeId: result.worktreeId });
    return { ...result, host: host.name };
  }

  /** The project's mirror on the host, made if missing, with `baseBranch` pushed to it and `pu init` run there. */
  async prepareMirror(host: HostRecord, projectRoot: string, baseBranch: string): Promise<string> {
    if (!(await branchExists(projectRoot, baseBranch))) throw new PuError("INVALID_ARGUMENT", `no branch ${baseBranch} in ${projectRoot}`);
    const mirror = hostMirrorPath(host, projectRoot);
    await pushBase(this.links, host, projectRoot, mirror, baseBranch);
    await this.links.request(host, "init", { projectRoot: mirror });
    return mirror;
  }

  /**
   * Routes an agent (and its worktree) the host started on pu's behalf — a group's member there —
   * from now on: status, attach, kill, merge and clean reach it by id.
   */
  async adopt(projectRoot: string, host: HostRecord, baseBranch: string, ids: { agentId?: string | null; worktreeId?: string | null }): Promise<void> {
    await this.placements.changeOrAddProject(host, projectRoot, baseBranch, (project) => routeIds(project, ids));
    if (ids.agentId) {
      this.watches.start(projectRoot);
      this.log.event("remote_adopted", { host: host.name, projectRoot, agentIds: [ids.agentId], worktreeIds: ids.worktreeId ? [ids.worktreeId] : [] });
    }
  }

  /**
   * `pu trust --on HOST`: what the mirror's `.pu/` on the host would run, trusted there unless
   * `showOnly`. The project's current branch is pushed to the mirror first (made if missing), so
   * what is shown and trusted is what the next agent placed there runs, not an older commit's.
   */
  async trustOn(projectRoot: string, hostName: string, showOnly: boolean): Promise<ResultOf<"trust">> {
    const host = await this.hosts.get(hostName);
    const branch = await currentBranch(projectRoot);
    if (!branch) throw new PuError("INVALID_STATE", `${projectRoot} is on a detached HEAD; check out the branch whose .pu/ should be trusted on ${hostName}`);
    const mirror = await this.prepareMirror(host, projectRoot, branch);
    return this.links.request(host, "trust", { projectRoot: mirror, ...(showOnly ? { showOnly: true } : {}) });
  }

  /** Each host's report of this project's mirror: fresh when it answers in time, else as last seen. */
  async reports(projectRoot: string): Promise<RemoteReport[]> {
    await this.checkFiles();
    return this.askHosts(projectRoot);
  }

  /** `reports` after the files were checked. */
  private askHosts(projectRoot: string): Promise<RemoteReport[]> {
    return Promise.all(
      this.projectsOf(projectRoot).map(async (project): Promise<RemoteReport> => {
        try {
          const report = await this.freshReport(project);
          this.reportProblems.delete(keyOf(project));
          return { project, ...this.record(project, report, true) };
        } catch (error) {
          // Whatever kept one host from answering (the link; a host no longer in hosts.json, or
          // hosts.json unreadable), its agents are shown as last known: one host never fails the
          // status of this machine's agents and the other hosts'.
          if (!isPuError(error) || !["DAEMON_UNAVAILABLE", "TIMEOUT", "PROTOCOL_MISMATCH", "NOT_INITIALIZED"].includes(error.code)) {
            const message = (error as Error).message;
            if (!this.hostsProblem) this.reportProblems.set(keyOf(project), message);
            this.log.event("remote_status_failed", { host: project.host, projectRoot, error: message });
          } else {
            this.reportProblems.delete(keyOf(project));
          }
          return { project, ...this.record(project, this.lastReport(project), false) };
        }
      }),
    );
  }

  /**
   * One agent placed on a host as its host reports it now (bounded like `pu status`); undefined
   * when the host does not answer in time or no longer has it. What it says is not recorded:
   * the followed reports (`watch`) stay the one source of status changes.
   */
  async agentNow(agentId: string): Promise<AgentView | undefined> {
    const project = this.placedAgent(agentId);
    if (!project) return undefined;
    try {
      const report = await this.freshReport(project);
      return report.agents[agentId] ?? Object.values(report.worktrees).find((w) => w.agents[agentId])?.agents[agentId];
    } catch {
      return undefined;
    }
  }

  /**
   * The host's report of a placement now. The whole answer — a connection to open included — is
   * bounded: a host that takes the connection and says nothing must not make `pu status` wait
   * (the attempt goes on behind).
   */
  private async freshReport(project: PlacedProject): Promise<StatusReport> {
    const host = await this.hosts.get(project.host);
    return this.bounded(project, STATUS_TIMEOUT_MS, this.links.request(host, "status", { projectRoot: project.mirror }, { timeoutMs: STATUS_TIMEOUT_MS }));
  }

  /**
   * Each host's roll-up of the agents pu placed there (the host's daemon reads their records and
   * keeps them); null for a host that does not answer in time.
   */
  async usage(projectRoot: string, by: UsageGrouping, since: string | undefined): Promise<{ host: string; result: UsageResult | null }[]> {
    return Promise.all(
      this.projectsOf(projectRoot)
        .filter((project) => project.agentIds.length > 0)
        .map(async (project) => {
          try {
            const host = await this.hosts.get(project.host);
            const fields = { projectRoot: project.mirror, by, agentIds: project.agentIds, ...(since ? { since } : {}) };
            return { host: project.host, result: await this.bounded(project, STATUS_TIMEOUT_MS, this.links.request(host, "usage", fields, { timeoutMs: STATUS_TIMEOUT_MS })) };
          } catch (error) {
            this.log.event("remote_usage_unanswered", { host: project.host, projectRoot, error: (error as Error).message });
            return { host: project.host, result: null };
          }
        }),
    );
  }

  /**
   * The local report with the hosts' agents added as this daemon last saw them (no waiting):
   * what every pushed status event carries. A host not heard from since the daemon started is
   * shown from the record, as unreachable until it answers.
   */
  overlay(local: StatusReport): StatusReport {
    const placed = this.projectsOf(local.projectRoot);
    const problems = this.problems(local.projectRoot);
    if (problems.length > 0) local = { ...local, problems: [...(local.problems ?? []), ...problems] };
    if (placed.length === 0) return local;
    const merged: StatusReport = { ...local, worktrees: { ...local.worktrees }, agents: { ...local.agents } };
    for (const project of placed) {
      addHostAgents(merged, project, this.seen.get(keyOf(project)) ?? { report: this.lastReport(project), reachable: false, seenAt: project.lastSeenAt });
    }
    return merged;
  }

  /** Called with the project and its agents' status changes whenever a host's report of it changes. */
  onChange(listener: (projectRoot: string, changes: AgentStatusChange[]) => void): void {
    this.changeListeners.push(listener);
  }

  /** Follows the hosts' reports of a project while `conn` (a `subscribe_status` stream) is open (remote-watches.ts). */
  watch(projectRoot: string, conn: ConnectionContext): void {
    this.watches.watch(projectRoot, conn);
    this.lookSoon();
    conn.onClose(() => {
      // No stream left: nothing is looked at until the next one opens.
      if (this.watches.roots().length > 0) return;
      clearTimeout(this.lookTimer);
      this.lookTimer = undefined;
    });
  }

  /** One look at the files every FILES_LOOK_MS while any project's status is followed; none after. */
  private lookSoon(): void {
    if (this.lookTimer !== undefined || this.watches.roots().length === 0) return;
    const timer = setTimeout(() => {
      void this.lookAtFiles()
        .catch((error) => this.log.event("problem_files_look_failed", { error: (error as Error).message }))
        .finally(() => {
          if (this.lookTimer === timer) this.lookTimer = undefined;
          this.lookSoon();
        });
    }, FILES_LOOK_MS);
    timer.unref();
    this.lookTimer = timer;
  }

  /**
   * hosts.json and remote-projects.json stat'ed; when one changed, what a status does is done
   * (the files read again, the placements' hosts asked) and each followed project whose problems
   * (or placements) changed gets a report pushed.
   */
  private async lookAtFiles(): Promise<void> {
    const roots = this.watches.roots();
    if (roots.length === 0) return;
    const [hostsChanged, placementsChanged] = await Promise.all([this.hostsVersion.changed(this.hostsFile), this.placements.changedOnDisk()]);
    if (!hostsChanged && !placementsChanged) return;
    const before = new Map(roots.map((root) => [root, JSON.stringify(this.problems(root))]));
    const placedBefore = JSON.stringify(this.placements.projects);
    await this.checkFiles();
    const placedChanged = JSON.stringify(this.placements.projects) !== placedBefore;
    await Promise.all(roots.map((root) => this.askHosts(root)));
    for (const root of roots) {
      if (!placedChanged && JSON.stringify(this.problems(root)) === before.get(root)) continue;
      this.log.event("problem_files_changed", { projectRoot: root, problems: this.problems(root).length });
      if (placedChanged) this.watches.start(root);
      for (const listener of this.changeListeners) listener(root, []);
    }
  }

  /** A host's report of a placement arrived (or the host went quiet): remembered, and the status changes told. */
  private heard(placed: PlacedProject, report: StatusReport | null, reachable: boolean): void {
    // The record is re-read on every change: the newest entry knows the newest ids.
    const project = this.placements.projects.find((p) => keyOf(p) === keyOf(placed)) ?? placed;
    const before = this.seen.get(keyOf(project))?.report;
    this.record(project, report, reachable);
    const changes = statusChanges(project, before, report);
    for (const listener of this.changeListeners) listener(project.projectRoot, changes);
  }

  /** A followed report is written to the record at most every few seconds (a busy host reports often). */
  private persistSoon(project: PlacedProject): void {
    const key = keyOf(project);
    if (this.persistTimers.has(key)) return;
    const timer = setTimeout(() => {
      this.persistTimers.delete(key);
      const seen = this.seen.get(key);
      if (seen?.report && seen.seenAt) void this.remember(project, seen.report, seen.seenAt).catch(() => undefined);
    }, PERSIST_EVERY_MS);
    timer.unref();
    this.persistTimers.set(key, timer);
  }

  /** A request about one placed id, sent to its host with the mirror as the project. */
  async forward<T extends ProjectRequest>(project: PlacedProject, type: T, fields: Omit<RequestFields<T>, "projectRoot">): Promise<ResultOf<T>> {
    const host = await this.hosts.get(project.host);
    return this.links.request(host, type, { ...fields, projectRoot: project.mirror } as RequestFields<T>);
  }

  /** A request that names only an agent (keys, logs, signals). */
  async forwardAgent<T extends "input" | "type_text" | "logs" | "agent_signal">(project: PlacedProject, type: T, fields: RequestFields<T>): Promise<ResultOf<T>> {
    const host = await this.hosts.get(project.host);
    // Inside the CLI's default 5 s, so a host that is slow to connect is named as such, not as this daemon.
    return this.bounded(project, QUICK_REQUEST_MS, this.links.request(host, type, fields));
  }

  /** Resize over the viewer's own bridge when it is attached (the host sizes the terminal per viewer), else the shared link. */
  resize(project: PlacedProject, req: RequestOf<"resize">, conn: ConnectionContext): Promise<ResultOf<"resize">> {
    return this.viewers.resize(project.host, req, conn, (work) => this.bounded(project, QUICK_REQUEST_MS, work));
  }

  /** Attach relayed from the host (remote-viewers.ts). */
  attach(project: PlacedProject, req: RequestOf<"attach">, conn: ConnectionContext): Promise<AttachResult> {
    return this.viewers.attach(project.host, req, conn);
  }

  /**
   * Merges a host worktree's branch into the local base: the branch is fetched back over the
   * transport (never forced over a local branch of the same name), then merged here as any.
   */
  async merge(project: PlacedProject, worktreeId: string, strategy: "merge" | "squash" | "ff-only", message: string | undefined): Promise<MergeResult> {
    const { host, worktree } = await this.fetchBack(project, worktreeId);
    const outcome = await mergeFetchedBack(this.links, host, project, worktree, strategy, message);
    if (outcome.nothingToMerge) return outcome;
    await this.placements.changeProject(project, (found) => {
      if (!found.merged.includes(worktreeId)) found.merged.push(worktreeId);
    });
    this.log.event("remote_merged", { host: project.host, worktreeId, branch: worktree.branch, commit: outcome.commit });
    return outcome;
  }

  /**
   * Removes a host worktree (its agents stopped there). Unless forced, refused while it holds
   * uncommitted files or commits the local base lacks — checked against this machine's base,
   * where the merge landed, after fetching the branch back.
   */
  async clean(project: PlacedProject, worktreeId: string, force: boolean, options: { keepOnRefusal?: boolean } = {}): Promise<CleanResult> {
    const { host, worktree } = await this.fetchBack(project, worktreeId);
    if (!force) {
      const kept = await workNotHere(this.links, host, project, worktree);
      if (kept) {
        const { reason, uncommittedFiles, unmergedCommits } = kept;
        if (!options.keepOnRefusal) throw new PuError("INVALID_STATE", `worktree ${worktreeId} not removed: ${reason}`, { details: { uncommittedFiles, unmergedCommits } });
        return { cleaned: [], kept: [{ worktreeId, name: worktree.name, ...kept }] };
      }
    }
    const result = await this.links.request(host, "clean", { projectRoot: project.mirror, worktreeId, force: true });
    await dropMergedBranch(project, worktree);
    const gone = new Set([worktreeId, ...Object.keys(worktree.agents)]);
    await this.placements.changeProject(project, (found) => {
      found.worktreeIds = found.worktreeIds.filter((id) => !gone.has(id));
      found.agentIds = found.agentIds.filter((id) => !gone.has(id));
      found.merged = found.merged.filter((id) => !gone.has(id));
    });
    this.log.event("remote_cleaned", { host: project.host, worktreeId });
    return result;
  }

  /** The worktrees pu placed for this project on its hosts that are still there (as last reported). */
  liveWorktrees(projectRoot: string): { project: PlacedProject; worktreeId: string }[] {
    return this.projectsOf(projectRoot).flatMap((project) => {
      const report = this.lastReport(project);
      return project.worktreeIds.filter((id) => report?.worktrees?.[id] !== undefined).map((worktreeId) => ({ project, worktreeId }));
    });
  }

  private async fetchBack(project: PlacedProject, worktreeId: string): Promise<{ host: HostRecord; worktree: WorktreeView }> {
    const host = await this.hosts.get(project.host);
    const report = await this.links.request(host, "status", { projectRoot: project.mirror }, { timeoutMs: STATUS_TIMEOUT_MS });
    this.record(project, report, true);
    const worktree = report.worktrees[worktreeId];
    if (!worktree) throw new PuError("WORKTREE_NOT_FOUND", `host ${project.host} no longer has worktree ${worktreeId}`);
    await fetchBranchBack(this.links, host, project.projectRoot, project.mirror, worktree.branch);
    return { host, worktree };
  }

  /**
   * What was heard from a placement now: kept in memory for status, and a report the host sent
   * written to the record at most every PERSIST_EVERY_MS (status asks often, a busy host reports often).
   */
  private record(project: PlacedProject, report: StatusReport | null, reachable: boolean): HeardReport {
    const seenAt = reachable ? new Date().toISOString() : (this.seen.get(keyOf(project))?.seenAt ?? project.lastSeenAt);
    const heard = { report, reachable, seenAt };
    this.seen.set(keyOf(project), heard);
    if (reachable && report) {
      this.persistSoon(project);
      this.adoptUnrecorded(project, report);
    }
    return heard;
  }

  /**
   * Spawns asked of the host whose answer was never recorded (this daemon died, or the answer
   * was lost): agents in the mirror started since then that pu does not route yet are adopted,
   * with their worktrees, so nothing the host started is left unreachable from here.
   */
  private adoptUnrecorded(placed: PlacedProject, report: StatusReport): void {
    const project = this.placements.projects.find((p) => keyOf(p) === keyOf(placed));
    const settled = (project?.spawning ?? []).filter((at) => !this.spawnsInFlight.has(`${keyOf(placed)}\0${at}`));
    if (!project || settled.length === 0) return;
    const { agentIds, worktreeIds } = unrecordedSince(project, report, settled);
    void this.placements.changeProject(project, (found) => {
      for (const id of agentIds) if (!found.agentIds.includes(id)) found.agentIds.push(id);
      for (const id of worktreeIds) if (!found.worktreeIds.includes(id)) found.worktreeIds.push(id);
      found.spawning = found.spawning.filter((at) => !settled.includes(at));
    })
      .then(() => {
        if (agentIds.length > 0) this.log.event("remote_adopted", { host: project.host, projectRoot: project.projectRoot, agentIds, worktreeIds });
      })
      .catch((error) => this.log.event("remote_adopt_failed", { host: project.host, error: (error as Error).message }));
  }

  /** The placement's newest report: heard by this daemon, else the record's. */
  private lastReport(project: PlacedProject): StatusReport | null {
    return this.seen.get(keyOf(project))?.report ?? (project.lastReport as StatusReport | null) ?? null;
  }

  /** A host's answer within `ms`, the host named when it is late (the request goes on behind). */
  private bounded<T>(project: PlacedProject, ms: number, work: Promise<T>): Promise<T> {
    return withDeadline(work, ms, `host ${project.host} did not answer within ${ms / 1000} s (pu host list shows its link)`);
  }

  private async remember(project: PlacedProject, report: StatusReport, seenAt: string): Promise<void> {
    await this.placements.changeProject(project, (found) => {
      found.lastReport = report as unknown as Record<string, unknown>;
      found.lastSeenAt = seenAt;
    });
  }
}

/** The placement routes these ids from now on (each recorded once). */
function routeIds(project: RemoteProject, ids: { agentId?: string | null; worktreeId?: string | null }): void {
  if (ids.agentId && !project.agentIds.includes(ids.agentId)) project.agentIds.push(ids.agentId);
  if (ids.worktreeId && !project.worktreeIds.includes(ids.worktreeId)) project.worktreeIds.push(ids.worktreeId);
}

/**
 * The name of a new worktree on a host, chosen the way the host would choose it (the given name,
 * else the prompt's first words, else the agent type) and then made free here: its branch,
 * pu/NAME, comes back into this repository under the same name, and a local worktree of that
 * name (a `pu spawn --agent claude` here and another on the host) would have its branch checked
 * out here, which git will not fetch into — the host's work could then be neither merged nor
 * cleaned.
 */
async function nameFreeHere(projectRoot: string, fields: { name?: string | undefined; prompt?: string | undefined; agent?: string | undefined }): Promise<string> {
  const agentType = fields.agent ?? (await loadConfig(projectRoot).then((c) => c.defaultAgent, () => "agent"));
  const base =
    (fields.name !== undefined ? normalizeWorktreeName(refuseControlCharacters("worktree name", fields.name)) : undefined) ??
    (fields.prompt ? nameFromPrompt(fields.prompt) : undefined) ??
    normalizeWorktreeName(agentType);
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if (!(await branchExists(projectRoot, `pu/${name}`))) return name;
  }
}
