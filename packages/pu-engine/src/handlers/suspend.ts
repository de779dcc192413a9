import { PuError } from "@pu/core/errors";
import { listAgents } from "@pu/core/manifest";
import type { RequestOf, SuspendResult } from "@pu/ipc/protocol";
import type { LiveAgent } from "../session/live-agent.js";
import { stopAgents, throwIfUnrecorded } from "../agents/stop.js";
import type { EngineState } from "../state.js";

/** `pu bench`: stops agents so they can be resumed later; nothing about them is forgotten. */
export async function handleSuspend(state: EngineState, req: RequestOf<"suspend">): Promise<SuspendResult> {
  const root = await state.project(req.projectRoot);
  const m = await state.store.read(root);
  const all = listAgents(m);
  const direct = req.target !== "all";
  const targets = direct ? all.filter((a) => a.agent.id === req.target) : all;
  if (direct && targets.length === 0) throw new PuError("AGENT_NOT_FOUND", `no agent ${req.target} in ${root}`);
  if (direct && req.callerAgentId === req.target) {
    throw new PuError("INVALID_ARGUMENT", `refusing to suspend the calling agent ${req.target}`);
  }

  const skipped: SuspendResult["skipped"] = [];
  const toStop: LiveAgent[] = [];
  for (const { agent } of targets) {
    const live = state.sessions.get(agent.id);
    if (!direct && agent.id === req.callerAgentId) skipped.push({ agentId: agent.id, reason: "calling agent" });
    else if (agent.suspended) skipped.push({ agentId: agent.id, reason: "already suspended" });
    else if (!live || live.session.exitCode !== null) skipped.push({ agentId: agent.id, reason: "not running" });
    else toStop.push(live);
  }
  if (direct && toStop.length === 0 && skipped[0]) {
    throw new PuError("INVALID_STATE", `${req.target} cannot be suspended: ${skipped[0].reason}`);
  }
  const { stopped } = await stopAgents(toStop, "suspend");
  state.log.event("suspend", { projectRoot: root, agents: stopped.map((s) => s.agentId) });
  throwIfUnrecorded(toStop);
  return { suspended: stopped.map((s) => s.agentId), skipped };
}
