import { deleteDefinition } from "@pu/core/definitions";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { definitionScopes } from "../automation/definitions.js";
import type { EngineState } from "../state.js";

export async function handleDefinitionDelete(
  state: EngineState,
  req: RequestOf<"definition_delete">,
): Promise<ResultOf<"definition_delete">> {
  const root = req.projectRoot === undefined ? undefined : await state.project(req.projectRoot);
  const options = req.scope === undefined ? definitionScopes(state, root) : { ...definitionScopes(state, root), scope: req.scope };
  const deleted = await deleteDefinition(req.kind, req.name, options);
  state.log.event("definition_deleted", { kind: req.kind, name: req.name, path: deleted.path });
  state.events.emit("definition_changed", { ...(root !== undefined ? { projectRoot: root } : {}), kind: req.kind, name: req.name });
  return { path: deleted.path };
}
