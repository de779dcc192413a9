import { PuError } from "@pu/core/errors";
import { listAgents, type AgentLocation, type Manifest } from "@pu/core/manifest";
import type { KillResult, RequestOf } from "@pu/ipc/protocol";
import type { LiveAgent } from "../session/live-agent.js";
import { dropSession } from "../agents/registry.js";
import { stopAgents, throwIfUnrecorded } from "../agents/stop.js";
import { ownedNote } from "../agents/owners.js";
import { ownedWorkIn, type EngineServices } from "../services.js";

/** The agents a kill target names: an agent id, a worktree id, "worktrees" or "all". */
function agentsForTarget(m: Manifest, target: string): { direct: boolean; agents: AgentLocation[] } {
  const all = listAgents(m);
  if (target === "all") return { direct: false, agents: all };
  if (target === "worktrees") return { direct: false, agents: all.filter((a) => a.worktree) };
  if (Object.hasOwn(m.worktrees, target)) return { direct: false, agents: all.filter((a) => a.worktree?.id === target) };
  const agent = all.find((a) => a.agent.id === target);
  if (agent) return { direct: true, agents: [agent] };
  if (target.startsWith("wt-")) throw new PuError("WORKTREE_NOT_FOUND", `no worktree ${target} in ${m.projectRoot}`);
  throw new PuError("AGENT_NOT_FOUND", `no agent or worktree ${target} in ${m.projectRoot}`);
}

export async function handleKill(services: EngineServices, req: RequestOf<"kill">): Promise<KillResult> {
  const { state } = services;
  const root = await state.project(req.projectRoot);
  const m = await state.store.read(root);
  const { direct, agents } = agentsForTarget(m, req.target);
  if (direct && req.callerAgentId === req.target) {
    throw new PuError("INVALID_ARGUMENT", `refusing to kill the calling agent ${req.target}`);
  }
  // Work a running ticket, group or plan owns: refused when named, skipped by a sweep; --force or the owner's cancel lets go.
  const owners = req.force ? undefined : ownedWorkIn(services, root);
  const namedWorktree = Object.hasOwn(m.worktrees, req.target) ? m.worktrees[req.target] : undefined;
  const namedOwner = direct ? owners?.agent(req.target) : namedWorktree ? owners?.worktree(namedWorktree) : undefined;
  if (namedOwner) throw new PuError("INVALID_STATE", `refusing to kill ${req.target}: it is ${ownedNote(namedOwner)}`);
  const excluded = new Set(req.exclude ?? []);
  if (req.callerAgentId) excluded.add(req.callerAgentId);

  const skipped: KillResult["skipped"] = [];
  const toStop: LiveAgent[] = [];
  for (const { agent } of agents) {
    if (!direct && excluded.has(agent.id)) {
      skipped.push({ agentId: agent.id, reason: "excluded" });
      continue;
    }
    const live = state.sessions.get(agent.id);
    const owner = live && live.session.exitCode === null ? owners?.agent(agent.id) : undefined;
    if (!live) {
      skipped.push({ agentId: agent.id, reason: agent.suspended ? "suspended (not running)" : "not running" });
    } else if (live.session.exitCode !== null) {
      skipped.push({ agentId: agent.id, reason: `already exited (code ${live.session.exitCode})` });
      // Killed again: the output of a process that is long gone is let go, once its exit is
      // in the manifest (until then the session is what knows it exited, and retries the write).
      if (live.exitRecordError === undefined) dropSession(state, agent.id);
    } else if (owner) {
      skipped.push({ agentId: agent.id, reason: ownedNote(owner), owner: { kind: owner.kind, id: owner.id } });
    } else {
      toStop.push(live);
    }
  }
  const { stopped } = await stopAgents(toStop, "kill");
  state.log.event("kill", { projectRoot: root, target: req.target, killed: stopped });
  throwIfUnrecorded(toStop);
  if (req.target !== "worktrees") return { killed: stopped, skipped };
  const rootAgentsLeft = listAgents(m).filter((a) => !a.worktree && state.isRunning(a.agent.id) && !owners?.agent(a.agent.id)).length;
  return { killed: stopped, skipped, rootAgentsLeft };
}
