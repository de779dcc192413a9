import { loadDefinition, saveDefinition } from "@pu/core/definitions";
import { definitionTrustItem, isTrustedKind } from "@pu/core/trust";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { definitionScopes } from "../automation/definitions.js";
import type { EngineState } from "../state.js";

/** Validates, then writes atomically; refuses to replace an existing file unless `overwrite`. */
export async function handleDefinitionSave(state: EngineState, req: RequestOf<"definition_save">): Promise<ResultOf<"definition_save">> {
  const root = req.projectRoot === undefined ? undefined : await state.project(req.projectRoot);
  const saved = await saveDefinition(req.kind, req.name, req.content, {
    ...definitionScopes(state, root),
    scope: req.scope,
    overwrite: req.overwrite === true,
  });
  state.log.event("definition_saved", { kind: req.kind, name: req.name, path: saved.path });
  // What a person saved through pu is theirs: it is trusted as written (a later hand edit asks again).
  if (root !== undefined && saved.scope === "local" && isTrustedKind(req.kind)) {
    const kind = req.kind;
    const loaded = await loadDefinition(kind, req.name, definitionScopes(state, root));
    await state.trust.trust(root, [definitionTrustItem(kind, loaded)]);
  }
  state.events.emit("definition_changed", { ...(root !== undefined ? { projectRoot: root } : {}), kind: req.kind, name: req.name });
  return { path: saved.path, scope: saved.scope, warnings: saved.warnings };
}
