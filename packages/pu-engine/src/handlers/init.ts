import path from "node:path";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type InitContext = Pick<EngineServices, "daemon">;

/** Makes the git repository containing projectRoot a pu project; idempotent, never clobbers. */
export async function handleInit(ctx: InitContext, req: RequestOf<"init">): Promise<ResultOf<"init">> {
  return ctx.daemon.init(path.resolve(req.projectRoot));
}
