import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type DefinitionSaveContext = Pick<EngineServices, "state" | "automation">;

export async function handleDefinitionSave(ctx: DefinitionSaveContext, req: RequestOf<"definition_save">): Promise<ResultOf<"definition_save">> {
  const root = req.projectRoot === undefined ? undefined : await ctx.state.project(req.projectRoot);
  return ctx.automation.saveDefinition(root, req);
}
