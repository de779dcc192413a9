import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type GateContext = Pick<EngineServices, "state" | "automation">;

/** `pu gate pre-commit|pre-push` from a git hook: every matching trigger's gates, run in `cwd`. */
export async function handleGate(ctx: GateContext, req: RequestOf<"gate">): Promise<ResultOf<"gate">> {
  return ctx.automation.hookGates(await ctx.state.project(req.projectRoot), req.event, req.cwd);
}
