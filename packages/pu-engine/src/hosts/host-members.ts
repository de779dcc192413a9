// A group's member placed on a host (`pu group run --on local,gpu-box`). The host's daemon runs
// it as a group of one member — its own slot, readiness, gate and fix turns, time limit, commit
// and diff stat, exactly as a member runs here — and this daemon (the control plane) follows that
// group until it ends, routing the member's agent and worktree by id meanwhile, so `pu status`,
// `attach`, `kill`, `pu group diff` and `pu group pick` reach them as any placed on a host.
import { setTimeout as sleep } from "node:timers/promises";
import { PuError, isPuError } from "@pu/core/errors";
import { TERMINAL_GROUP_PHASES, type DiffStat, type GroupKind, type GroupSettings } from "@pu/core/group";
import { hostMirrorPath } from "@pu/core/hosts-file";
import { budgetTokens } from "@pu/core/usage";
import type { AgentView, GateRun, GroupMemberView, GroupView, UsageFigures, WorktreeDiff } from "@pu/ipc/protocol";
import type { DaemonLog } from "../daemon-log.js";
import type { HostLinks } from "./host-links.js";
import type { HostService } from "./host-service.js";
import { hostTrustError } from "./project-mirror.js";
import type { RemoteAgentService } from "./remote-agents.js";

/** A host's answer to a follow-up look at a member's group: within this or the look is tried again later. */
const STATUS_TIMEOUT_MS = 10_000;
/** How often a member's group on a host is looked at; an unreachable host is asked less often, up to the second figure. */
const POLL_MS = 1000;
const POLL_MAX_MS = 30_000;
/** Making the member's group on the host waits for the mirror's push and the host's checks. */
const START_TIMEOUT_MS = 120_000;
/** A start the link lost (no answer, or no link) is asked again after these pauses; the host answers with the group it made, if it made one. */
const START_RETRY_MS = [2000, 5000, 10_000];
const LINK_LOST = ["DAEMON_UNAVAILABLE", "TIMEOUT"];
/** A host's answer on its agents' usage (a budget check waits for it). */
const USAGE_TIMEOUT_MS = 5000;
/** How often a member's owner (its group or plan) is asked whether its budget is spent while the member runs on a host. */
const SPENT_LOOK_MS = 3000;

export interface HostMemberSpec {
  groupId: string;
  variant: string;
  kind: GroupKind;
  delegator: string;
  /** The member's whole prompt. */
  prompt: string;
  /** The branch the member starts from, pushed to the host's mirror first. */
  baseBranch: string;
  /** PU_ variables for the member's agent and gate there. */
  env?: Record<string, string>;
  /** A worktree of the host's to run in (a ticket's, made by its first step); absent: a new one from `baseBranch`. */
  worktree?: string;
  settings: HostMemberLimits;
}

/** What a member's group on the host is held to there: its gate and fix turns, time limit and budget. */
type HostMemberLimits = Pick<GroupSettings, "gate" | "max_retries" | "timeout_minutes" | "max_cost" | "max_tokens">;

/** What following a member's group on its host watches besides the host's answers. */
interface FollowWatch {
  signal: AbortSignal;
  /** True once this daemon no longer follows the member (it stops, or the member is stopped here). */
  over(): boolean;
  /** The member as the host reports it, each time it answers. */
  seen(member: GroupMemberView): Promise<void>;
  /**
   * Why the member's owner (its group or plan) may spend no more, counted over all its agents here
   * and on hosts; once it says so, the member's agent there is held at what it spent (its turn
   * interrupted there, as a member here is interrupted), once.
   */
  spent?(): Promise<string | undefined>;
  /**
   * Names the owner `spent` asks about (`group:ID`, `plan:ID`): members of one owner share one
   * answer per look, so a group with many members on hosts is counted once, not once per member.
   */
  owner?: string;
}

export class HostMembers {
  /** Each placed agent's figures as its host last reported them. */
  private readonly lastUsage = new Map<string, UsageFigures>();
  /** The latest "is it spent" answer per owner (project root and FollowWatch.owner), shared by its members for one look. */
  private readonly spentLooks = new Map<string, { at: number; answer: Promise<string | undefined> }>();

  constructor(
    private readonly hosts: HostService,
    private readonly links: HostLinks,
    private readonly remote: RemoteAgentService,
    private readonly log: DaemonLog,
  ) {}

  /** NOT_FOUND in one line when no host has the name. */
  async requireHost(name: string): Promise<void> {
    await this.hosts.get(name);
  }

  /**
   * The member's group on the host: the base pushed to the mirror, then made there. Asked again
   * for the same member (this daemon restarted before the answer was recorded), the host answers
   * with the group it made then, so a member never runs twice — which is also why a start the link
   * lost is asked again a few times before the member is given up as failed.
   */
  async start(projectRoot: string, hostName: string, spec: HostMemberSpec, signal?: AbortSignal): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.startOnce(projectRoot, hostName, spec);
      } catch (error) {
        const pause = START_RETRY_MS[attempt];
        if (!isPuError(error) || !LINK_LOST.includes(error.code) || pause === undefined) throw error;
        await sleep(pause, undefined, { signal }).catch(() => undefined);
        if (signal?.aborted) throw error;
      }
    }
  }

  private async startOnce(projectRoot: string, hostName: string, spec: HostMemberSpec): Promise<string> {
    const host = await this.hosts.get(hostName);
    const mirror = await this.remote.prepareMirror(host, projectRoot, spec.baseBranch);
    const s = spec.settings;
    try {
      const view = await this.links.request(
        host,
        "group_run",
        {
          projectRoot: mirror,
          kind: spec.kind,
          agents: [spec.delegator],
          prompt: spec.prompt,
          prompts: [],
          base: spec.baseBranch,
          ...(s.gate ? { gate: s.gate.run, gateTimeoutSeconds: s.gate.timeout_seconds, gateExpectExit: s.gate.expect_exit } : {}),
          maxRetries: s.max_retries,
          ...(s.timeout_minutes != null ? { timeoutMinutes: s.timeout_minutes } : {}),
          // The group's budget holds each member on its host (the host's daemon enforces it there).
          ...(s.max_cost != null ? { maxCost: s.max_cost } : {}),
          ...(s.max_tokens != null ? { maxTokens: s.max_tokens } : {}),
          placedMember: { groupId: spec.groupId, variant: spec.variant, ...(spec.env ? { env: spec.env } : {}), ...(spec.worktree ? { worktree: spec.worktree } : {}) },
        },
        { timeoutMs: START_TIMEOUT_MS },
      );
      return view.groupId;
    } catch (error) {
      throw hostTrustError(host.name, error);
    }
  }

  /** The member's group as the host sees it now; its agent and worktree are routed from here once it has them. */
  async status(projectRoot: string, hostName: string, hostGroupId: string, baseBranch: string): Promise<GroupView> {
    const host = await this.hosts.get(hostName);
    const view = await this.links.request(host, "group_status", { projectRoot: hostMirrorPath(host, projectRoot), groupId: hostGroupId }, { timeoutMs: STATUS_TIMEOUT_MS });
    const member = view.members[0];
    const unrouted = (member?.agentId && !this.remote.placedAgent(member.agentId)) || (member?.worktreeId && !this.remote.placedWorktree(member.worktreeId));
    if (member && unrouted) await this.remote.adopt(projectRoot, host, baseBranch, { agentId: member.agentId, worktreeId: member.worktreeId });
    return view;
  }

  /**
   * Looks at the member's group on the host until it ends (its last view) or `over()` says to stop
   * (undefined). While the host is unreachable the member goes on there; it is asked again, less
   * often, until it answers (see FollowWatch).
   */
  async follow(projectRoot: string, hostName: string, hostGroupId: string, baseBranch: string, watch: FollowWatch): Promise<GroupView | undefined> {
    let delay = POLL_MS;
    let lookedAt = 0;
    let held = false;
    for (;;) {
      if (watch.over()) return undefined;
      let view: GroupView | undefined;
      try {
        view = await this.status(projectRoot, hostName, hostGroupId, baseBranch);
        delay = POLL_MS;
      } catch (error) {
        // The host answers that the group is gone (or the host was removed here): nothing to wait for.
        if (isPuError(error) && error.code === "NOT_FOUND") throw error;
        delay = Math.min(delay * 2, POLL_MAX_MS);
      }
      const member = view?.members[0];
      if (member) await watch.seen(member);
      if (view && (TERMINAL_GROUP_PHASES as readonly string[]).includes(view.phase)) return view;
      if (member?.agentId && watch.spent && !held && Date.now() - lookedAt >= SPENT_LOOK_MS) {
        lookedAt = Date.now();
        const why = await this.spentLook(projectRoot, watch.owner, watch.spent);
        // Not held (the host did not answer): asked again at the next look.
        if (why !== undefined) held = await this.holdAtSpent(projectRoot, hostName, member.agentId, why).then(() => true, () => false);
      }
      await sleep(delay, undefined, { signal: watch.signal }).catch(() => undefined);
    }
  }

  /**
   * Sets a placed agent's budget to what it has spent: its host stops its turn at once and keeps it
   * stopped (a budget the host holds, so a link that drops after this loses no stop).
   */
  private async holdAtSpent(projectRoot: string, hostName: string, agentId: string, why: string): Promise<void> {
    const placed = this.remote.placedAgent(agentId);
    if (!placed) throw new PuError("AGENT_NOT_FOUND", `agent ${agentId} is not placed on host ${hostName}`);
    const [figures] = await this.usageOf(projectRoot, [{ host: hostName, agentId }]);
    const maxTokens = Math.max(1, figures ? budgetTokens(figures) : 0);
    await this.remote.forward(placed, "budget", { agentId, maxTokens });
    this.log.event("host_agent_held", { projectRoot, host: hostName, agentId, maxTokens, reason: `its owner's budget is spent (${why})` });
  }

  /** Whether the watched member's owner is spent: one look per owner shared by its members (undefined also when it could not be told). */
  private spentLook(projectRoot: string, owner: string | undefined, spent: () => Promise<string | undefined>): Promise<string | undefined> {
    const look = () => spent().catch(() => undefined);
    if (owner === undefined) return look();
    const now = Date.now();
    for (const [key, { at }] of this.spentLooks) if (now - at >= SPENT_LOOK_MS) this.spentLooks.delete(key);
    const key = `${projectRoot}\0${owner}`;
    let shared = this.spentLooks.get(key);
    if (!shared) this.spentLooks.set(key, (shared = { at: now, answer: look() }));
    return shared.answer;
  }

  /** Stops the member on the host (recorded cancelled there); a group that already ended is left as it is. */
  async cancel(projectRoot: string, hostName: string, hostGroupId: string): Promise<void> {
    const host = await this.hosts.get(hostName);
    try {
      await this.links.request(host, "group_cancel", { projectRoot: hostMirrorPath(host, projectRoot), groupId: hostGroupId });
    } catch (error) {
      if (!isPuError(error) || error.code !== "INVALID_STATE") throw error;
    }
  }

  /** The gate runs the host recorded for the member's agent (command, exit code, duration, output tail). */
  async gateRuns(projectRoot: string, hostName: string, agentId: string): Promise<GateRun[]> {
    const host = await this.hosts.get(hostName);
    const { runs } = await this.links.request(host, "trigger_log", { projectRoot: hostMirrorPath(host, projectRoot), agentId }, { timeoutMs: STATUS_TIMEOUT_MS });
    return runs;
  }

  /**
   * What agents placed on hosts used, each host asked for its own (in parallel); a host that does
   * not answer in time gives what it said last, so a budget never reads a dropped link as spent-nothing.
   */
  async usageOf(projectRoot: string, placed: readonly { host: string; agentId: string }[]): Promise<UsageFigures[]> {
    const byHost = new Map<string, string[]>();
    for (const { host, agentId } of placed) byHost.set(host, [...(byHost.get(host) ?? []), agentId]);
    await Promise.all(
      [...byHost].map(async ([name, agentIds]) => {
        try {
          const host = await this.hosts.get(name);
          const result = await this.links.request(host, "usage", { projectRoot: hostMirrorPath(host, projectRoot), by: "agent", agentIds }, { timeoutMs: USAGE_TIMEOUT_MS });
          for (const row of result.rows) this.lastUsage.set(row.key, row);
        } catch {
          // the last figures heard stand
        }
      }),
    );
    return placed.flatMap(({ agentId }) => {
      const known = this.lastUsage.get(agentId);
      return known ? [known] : [];
    });
  }

  /** A placed agent as its host reports it now (undefined: the host did not answer, or has no such agent). */
  agentNow(agentId: string): Promise<AgentView | undefined> {
    return this.remote.agentNow(agentId);
  }

  /** A member's change, computed on the host against the base it started from. */
  async diff(worktreeId: string, stat: boolean): Promise<WorktreeDiff> {
    const project = this.placementOf(worktreeId);
    const result = await this.remote.forward(project, "diff", { worktreeId, ...(stat ? { stat: true } : {}) });
    const found = result.worktrees.find((w) => w.worktreeId === worktreeId);
    if (!found) throw new PuError("WORKTREE_NOT_FOUND", `host ${project.host} no longer has worktree ${worktreeId}`);
    if (found.error) throw new PuError("GIT_ERROR", `host ${project.host}: ${found.error}`);
    return found;
  }

  /** Merges the member's branch here (fetched back from the host first). */
  async merge(worktreeId: string, strategy: "merge" | "squash" | "ff-only", message: string) {
    return this.remote.merge(this.placementOf(worktreeId), worktreeId, strategy, message);
  }

  private placementOf(worktreeId: string) {
    const project = this.remote.placedWorktree(worktreeId);
    if (!project) throw new PuError("WORKTREE_NOT_FOUND", `no worktree ${worktreeId} is placed on a host`);
    return project;
  }

  /** Removes a member's worktree on the host, work and all (the person picked another). */
  async discard(worktreeId: string) {
    const project = this.remote.placedWorktree(worktreeId);
    if (!project) return undefined;
    return this.remote.clean(project, worktreeId, true);
  }
}

/** How a member ended on its host, as this daemon records it: the host's own result, or why the host's group ended without one. */
export function hostMemberResult(view: GroupView): {
  state: "done" | "failed" | "cancelled";
  reason?: string | null;
  exit_code?: number | null;
  gate?: { passed: boolean; exit_code: number | null; attempts: number };
  output: string;
  output_source: "file" | "screen" | "none";
  diff: DiffStat | null;
} {
  const member = view.members[0];
  const ended = member && (member.state === "done" || member.state === "failed" || member.state === "cancelled") ? member.state : undefined;
  const state = ended ?? (view.phase === "cancelled" ? "cancelled" : "failed");
  const reason = member?.reason ?? (state === "done" ? null : (view.failureReasons[0] ?? `its group on the host ended ${view.phase}`));
  return {
    state,
    reason,
    exit_code: member?.exitCode ?? null,
    ...(member?.gate ? { gate: { passed: member.gate.passed, exit_code: member.gate.exitCode, attempts: member.gate.attempts } } : {}),
    output: member?.output ?? "",
    output_source: member?.outputSource ?? "none",
    diff: member?.diff ?? null,
  };
}
