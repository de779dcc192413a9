import { loadDefinition } from "@pu/core/definitions";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { definitionScopes } from "../automation/definitions.js";
import type { EngineState } from "../state.js";

/** The definition `loadDefinition` would use (local wins), as stored and as parsed. */
export async function handleDefinitionGet(state: EngineState, req: RequestOf<"definition_get">): Promise<ResultOf<"definition_get">> {
  const root = req.projectRoot === undefined ? undefined : await state.project(req.projectRoot);
  const loaded = await loadDefinition(req.kind, req.name, definitionScopes(state, root));
  return { name: loaded.name, scope: loaded.scope, path: loaded.path, content: loaded.content, parsed: loaded.parsed, warnings: loaded.warnings };
}
