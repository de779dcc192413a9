import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type ShutdownContext = Pick<EngineServices, "daemon">;

/** Replies first; the daemon then stops accepting, suspends every agent and exits. */
export async function handleShutdown(ctx: ShutdownContext, _req: RequestOf<"shutdown">): Promise<ResultOf<"shutdown">> {
  ctx.daemon.shutdown();
  return { stopping: true };
}
