import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { bindTrigger, loadAgentTrigger, triggerBinding } from "../automation/definitions.js";
import { agentIn, type EngineState } from "../state.js";

/** Binds a trigger to an existing agent (replacing any binding), starting at its first action. */
export async function handleAssignTrigger(state: EngineState, req: RequestOf<"assign_trigger">): Promise<ResultOf<"assign_trigger">> {
  const root = await state.project(req.projectRoot);
  const { parsed: trigger } = await loadAgentTrigger(state, root, req.trigger);
  const binding = triggerBinding(trigger, req.vars);
  await state.updateManifest(root, (m) => {
    bindTrigger(agentIn(m, req.agentId).agent, binding);
  });
  state.log.event("trigger_assigned", { projectRoot: root, agentId: req.agentId, trigger: trigger.name });
  // An agent already waiting will not become waiting again by itself.
  state.events.emit("trigger_assigned", { projectRoot: root, agentId: req.agentId });
  return { agentId: req.agentId, triggerName: trigger.name, triggerTotal: trigger.sequence.length, triggerState: "active" };
}
