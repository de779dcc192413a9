import type { HealthResult, RequestOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type HealthContext = Pick<EngineServices, "daemon">;

export async function handleHealth(ctx: HealthContext, _req: RequestOf<"health">): Promise<HealthResult> {
  return ctx.daemon.health();
}
