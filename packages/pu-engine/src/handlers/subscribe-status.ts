import type { RequestOf, StatusReport } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { EngineServices } from "../services.js";

/** Replies with the report now; status_event frames follow on this connection until it closes. */
export async function handleSubscribeStatus(
  { state, statusWatch, remote }: Pick<EngineServices, "state" | "statusWatch" | "remote">,
  req: RequestOf<"subscribe_status">,
  ctx: ConnectionContext,
): Promise<StatusReport> {
  const root = await state.project(req.projectRoot);
  // The hosts' agents of this project: asked now (bounded), then followed while the stream is open.
  await remote.reports(root);
  remote.watch(root, ctx);
  const report = await statusWatch.subscribe(root, req.id, ctx, await state.store.read(root));
  state.noticeOnShutdown(ctx, () => ({
    type: "notice",
    id: req.id,
    code: "SHUTDOWN",
    message: "the pu daemon is stopping; its running agents are suspended (`pu play ID` resumes one)",
  }));
  return report;
}
