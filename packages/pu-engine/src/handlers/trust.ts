import type { RequestOf, TrustResult } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type TrustContext = Pick<EngineServices, "state" | "automation">;

/** Shows what the project's `.pu/` can run and (unless `showOnly`) trusts all of it as it is now. */
export async function handleTrust(ctx: TrustContext, req: RequestOf<"trust">): Promise<TrustResult> {
  return ctx.automation.trust(await ctx.state.project(req.projectRoot), req.showOnly === true);
}
