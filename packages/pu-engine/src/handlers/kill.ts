import type { KillResult, RequestOf } from "@pu/ipc/protocol";
import { ownedWorkIn, type EngineServices } from "../services.js";

export type KillContext = Pick<EngineServices, "state" | "agents" | "queue" | "groups" | "plans">;

/** `pu kill`: work a running ticket, group or plan owns is left alone unless --force (or the owner's cancel). */
export async function handleKill(ctx: KillContext, req: RequestOf<"kill">): Promise<KillResult> {
  const root = await ctx.state.project(req.projectRoot);
  return ctx.agents.kill(root, req, req.force ? undefined : ownedWorkIn(ctx, root));
}
