import { deleteDefinition } from "@pu/core/definitions";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { definitionScopes } from "../definitions-service.js";
import type { EngineState } from "../state.js";

export async function handleDefinitionDelete(
  state: EngineState,
  req: RequestOf<"definition_delete">,
): Promise<ResultOf<"definition_delete">> {
  const root = req.projectRoot === undefined ? undefined : await state.project(req.projectRoot);
  const options = req.scope === undefined ? definitionScopes(state, root) : { ...definitionScopes(state, root), scope: req.scope };
  const deleted = await deleteDefinition(req.kind, req.name, options);
  state.log.event("definition_deleted", { kind: req.kind, name: req.name, path: deleted.path });
  if (req.kind === "schedule") state.scheduler?.rearm("schedule deleted");
  return { path: deleted.path };
}
