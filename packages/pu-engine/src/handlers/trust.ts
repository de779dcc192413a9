import { projectTrustItems } from "@pu/core/trust";
import type { RequestOf, TrustResult } from "@pu/ipc/protocol";
import { definitionScopes } from "../automation/definitions.js";
import type { EngineState } from "../state.js";

/** Shows what the project's `.pu/` can run and (unless `showOnly`) trusts all of it as it is now. */
export async function handleTrust(state: EngineState, req: RequestOf<"trust">): Promise<TrustResult> {
  const root = await state.project(req.projectRoot);
  const items = await projectTrustItems({ ...definitionScopes(state, root), projectRoot: root });
  const untrusted = new Set((await state.trust.untrusted(root, items)).map((i) => i.key));
  const recorded = req.showOnly ? 0 : untrusted.size;
  if (!req.showOnly) {
    await state.trust.trust(root, items);
    state.log.event("trusted", { projectRoot: root, items: [...untrusted] });
    if (untrusted.size > 0) state.events.emit("project_trusted", { projectRoot: root, keys: [...untrusted] });
  }
  return { items: items.map(({ key, file, runs }) => ({ key, file, runs, trusted: !untrusted.has(key) })), recorded };
}
