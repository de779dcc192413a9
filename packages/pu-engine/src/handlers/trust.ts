import type { RequestOf, TrustResult } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type TrustContext = Pick<EngineServices, "state" | "automation" | "remote">;

/** Shows what the project's `.pu/` can run and (unless `showOnly`) trusts all of it as it is now. */
export async function handleTrust(ctx: TrustContext, req: RequestOf<"trust">): Promise<TrustResult> {
  const root = await ctx.state.project(req.projectRoot);
  // A host's daemon keeps its own trust: `--on` asks it about (and records there) the mirror's `.pu/`.
  if (req.on !== undefined) return ctx.remote.trustOn(root, req.on, req.showOnly === true);
  return ctx.automation.trust(root, req.showOnly === true);
}
