import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type DefinitionGetContext = Pick<EngineServices, "state" | "automation">;

export async function handleDefinitionGet(ctx: DefinitionGetContext, req: RequestOf<"definition_get">): Promise<ResultOf<"definition_get">> {
  const root = req.projectRoot === undefined ? undefined : await ctx.state.project(req.projectRoot);
  return ctx.automation.getDefinition(root, req.kind, req.name);
}
