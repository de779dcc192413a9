import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { setScheduleEnabled } from "../automation/schedules.js";
import type { EngineState } from "../state.js";

/** Toggles `enabled` in the project's schedule file (other keys and comments kept) and re-arms the timer. */
export async function handleScheduleEnable(state: EngineState, req: RequestOf<"schedule_enable">): Promise<ResultOf<"schedule_enable">> {
  const root = await state.project(req.projectRoot);
  const result = await setScheduleEnabled(state, root, req.name, req.enabled);
  state.events.emit("definition_changed", { projectRoot: root, kind: "schedule", name: req.name });
  return result;
}
