import { listDefinitions } from "@pu/core/definitions";
import type { DefinitionSummary, RequestOf, ResultOf } from "@pu/ipc/protocol";
import { definitionScopes } from "../automation/definitions.js";
import { scheduleDetails } from "../automation/schedules.js";
import type { EngineState } from "../state.js";

/** Local definitions first, then global ones not hidden by a local file; schedules carry their timing. */
export async function handleDefinitionList(state: EngineState, req: RequestOf<"definition_list">): Promise<ResultOf<"definition_list">> {
  const root = req.projectRoot === undefined ? undefined : await state.project(req.projectRoot);
  const scopes = definitionScopes(state, root);
  const found = await listDefinitions(req.kind, scopes);
  const definitions: DefinitionSummary[] = [];
  for (const summary of found) {
    const entry: DefinitionSummary = { ...summary };
    if (req.kind === "schedule" && summary.error === undefined) {
      entry.details = await scheduleDetails(summary.name, summary.scope, summary.path, root);
    }
    definitions.push(entry);
  }
  return { definitions };
}
