import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type DefinitionListContext = Pick<EngineServices, "state" | "automation">;

export async function handleDefinitionList(ctx: DefinitionListContext, req: RequestOf<"definition_list">): Promise<ResultOf<"definition_list">> {
  const root = req.projectRoot === undefined ? undefined : await ctx.state.project(req.projectRoot);
  return { definitions: await ctx.automation.listDefinitions(root, req.kind) };
}
