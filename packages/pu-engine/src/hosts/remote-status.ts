// A host's status report of a project's mirror, read for this machine: its agents and worktrees
// added to the local report, each naming its host and whether that host answers; the status of
// each agent in it; which of those changed between two reports; and which agents a lost spawn answer left unrouted.
import type { AgentStatus } from "@pu/core/manifest";
import type { RemoteProject } from "@pu/core/remote-projects-file";
import type { AgentView, SpawnResult, StatusReport, WorktreeView } from "@pu/ipc/protocol";
import type { AgentStatusChange } from "../engine-events.js";

/** What this daemon last heard from a placement, and whether the host answered then. */
/** One placement (a project on a host) as a map key. */
export const placementKey = (p: Pick<RemoteProject, "host" | "projectRoot">): string => `${p.host}\0${p.projectRoot}`;

export interface HeardReport {
  report: StatusReport | null;
  reachable: boolean;
  seenAt: string | null;
}

/** Every agent's status in a report (root and worktree agents alike). */
export function agentStatuses(report: StatusReport | null | undefined): Map<string, AgentStatus> {
  const out = new Map<string, AgentStatus>();
  if (!report) return out;
  for (const a of Object.values(report.agents ?? {})) out.set(a.id, a.status);
  for (const wt of Object.values(report.worktrees ?? {})) for (const a of Object.values(wt.agents)) out.set(a.id, a.status);
  return out;
}

/**
 * Adds one placement's agents and worktrees (those pu placed) into `merged`, tagged with their
 * host. Every agent pu routes there is listed, whether or not a report of the host ever held it
 * (placed after the last report the host sent, and the link dropped since): shown as the spawn
 * answered it (`withSpawned` keeps that in the last report), else as a row whose status is
 * `unknown` — never dropped, so a person always sees what runs on the host.
 */
export function addHostAgents(merged: StatusReport, project: RemoteProject, heard: HeardReport): void {
  const { report, reachable, seenAt } = heard;
  const tag = (agent: AgentView): AgentView => {
    const view: AgentView = { ...agent, host: project.host, hostState: reachable ? "connected" : "unreachable", hostSeenAt: seenAt };
    // Last known: the host is not answering, so nothing is known to run or to count idle time.
    if (!reachable) Object.assign(view, { live: false, idleSeconds: null });
    return view;
  };
  const listed = new Set<string>();
  for (const [id, agent] of Object.entries(report?.agents ?? {})) {
    if (!project.agentIds.includes(id)) continue;
    merged.agents[id] = tag(agent);
    listed.add(id);
  }
  for (const [id, wt] of Object.entries(report?.worktrees ?? {})) {
    if (!project.worktreeIds.includes(id)) continue;
    const agents: Record<string, AgentView> = {};
    for (const [agentId, agent] of Object.entries(wt.agents)) {
      agents[agentId] = tag(agent);
      listed.add(agentId);
    }
    const status = project.merged.includes(id) ? "merged" : wt.status;
    merged.worktrees[id] = { ...wt, status, agents, host: project.host } as WorktreeView;
  }
  for (const id of project.agentIds) if (!listed.has(id)) merged.agents[id] = tag(unknownAgent(id, seenAt));
}

/**
 * An agent pu routes to a host that no report of it (nor its spawn's answer) describes: its
 * status is not known here, and says so (`unknown`, outside the three a report holds) rather
 * than guessing one — it is neither running as far as pu knows nor `broken`.
 */
function unknownAgent(id: string, seenAt: string | null): AgentView {
  return {
    id,
    name: "?",
    agentType: "?",
    status: "unknown" as AgentStatus,
    storedStatus: "unknown" as AgentStatus,
    startedAt: seenAt ?? new Date(0).toISOString(),
    live: false,
    idleSeconds: null,
  } as AgentView;
}

/**
 * The last report of a placement with a spawn's answer in it, as if heard: an agent placed after
 * the host's last report is then listed (as the spawn answered) while the link is down, and
 * counted by `holdings`. A report that already holds the agent is returned as it is.
 */
export function withSpawned(report: StatusReport | null | undefined, mirror: string, spawned: SpawnResult): StatusReport {
  const now = new Date().toISOString();
  const base: StatusReport = report ?? { projectRoot: mirror, worktrees: {}, agents: {}, createdAt: now, updatedAt: now };
  if (agentStatuses(base).has(spawned.agentId)) return base;
  const agent = { ...spawned.agent, storedStatus: spawned.agent.status, live: false, idleSeconds: null } as AgentView;
  if (!spawned.worktreeId) return { ...base, agents: { ...base.agents, [spawned.agentId]: agent } };
  const existing = base.worktrees[spawned.worktreeId];
  const worktree =
    existing ??
    ({
      id: spawned.worktreeId,
      name: spawned.agent.name,
      path: spawned.worktreePath ?? spawned.cwd,
      branch: spawned.branch ?? "",
      status: "active",
      createdAt: spawned.agent.startedAt,
      agents: {},
    } as unknown as WorktreeView);
  return { ...base, worktrees: { ...base.worktrees, [spawned.worktreeId]: { ...worktree, agents: { ...worktree.agents, [spawned.agentId]: { ...agent, worktreeId: spawned.worktreeId } } } } };
}

/** The placement's agents whose status differs between two reports of it. */
export function statusChanges(project: RemoteProject, before: StatusReport | null | undefined, after: StatusReport | null): AgentStatusChange[] {
  const was = agentStatuses(before);
  const ours = (agentId: string) => project.agentIds.includes(agentId) || Object.values(after?.worktrees ?? {}).some((wt) => project.worktreeIds.includes(wt.id) && agentId in wt.agents);
  const changes: AgentStatusChange[] = [];
  for (const [agentId, status] of agentStatuses(after)) {
    if (ours(agentId) && was.get(agentId) !== status) changes.push({ projectRoot: project.projectRoot, agentId, from: was.get(agentId) ?? null, to: status });
  }
  return changes;
}

/**
 * Agents (and their worktrees) in a host's report of the mirror that the placement does not
 * route, started since the earliest of `askedAt` (spawns whose answer was never recorded).
 */
export function unrecordedSince(project: RemoteProject, report: StatusReport, askedAt: readonly string[]): { agentIds: string[]; worktreeIds: string[] } {
  // A little before the first ask: the host's clock and this one's may differ by a moment.
  const since = Math.min(...askedAt.map((at) => Date.parse(at))) - 5_000;
  const unrecorded = (agent: AgentView) => !project.agentIds.includes(agent.id) && Date.parse(agent.startedAt ?? "") >= since;
  const agentIds = Object.values(report.agents ?? {}).filter(unrecorded).map((a) => a.id);
  const worktreeIds: string[] = [];
  for (const wt of Object.values(report.worktrees ?? {})) {
    // A worktree removed on the host (pu clean) is nothing to route any more.
    if (wt.status === "cleaned") continue;
    const adopted = Object.values(wt.agents).filter(unrecorded).map((a) => a.id);
    if (adopted.length === 0) continue;
    agentIds.push(...adopted);
    if (!project.worktreeIds.includes(wt.id)) worktreeIds.push(wt.id);
  }
  return { agentIds, worktreeIds };
}
