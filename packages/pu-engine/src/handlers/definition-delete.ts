import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type DefinitionDeleteContext = Pick<EngineServices, "state" | "automation">;

export async function handleDefinitionDelete(ctx: DefinitionDeleteContext, req: RequestOf<"definition_delete">): Promise<ResultOf<"definition_delete">> {
  const root = req.projectRoot === undefined ? undefined : await ctx.state.project(req.projectRoot);
  return ctx.automation.deleteDefinition(root, req.kind, req.name, req.scope);
}
