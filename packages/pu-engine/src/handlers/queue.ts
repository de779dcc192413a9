// queue_status, queue_pause, queue_resume, queue_collection.
import { PuError } from "@pu/core/errors";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type QueueContext = Pick<EngineServices, "queue" | "state">;

export async function handleQueueStatus(services: QueueContext, req: RequestOf<"queue_status">): Promise<ResultOf<"queue_status">> {
  if (req.projectRoot !== undefined) await services.state.project(req.projectRoot);
  return services.queue.status();
}

export async function handleQueuePause(services: QueueContext, paused: boolean): Promise<ResultOf<"queue_pause">> {
  return { paused: await services.queue.setPaused(paused) };
}

export async function handleQueueCollection(services: QueueContext, req: RequestOf<"queue_collection">): Promise<ResultOf<"queue_collection">> {
  const root = await services.state.project(req.projectRoot);
  if (req.name !== undefined) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(req.name)) {
      throw new PuError("INVALID_ARGUMENT", `collection name "${req.name}" must be letters, digits, - or _`);
    }
    await services.queue.setCollection(root, req.name);
  }
  return { project: root, collection: services.queue.store.state.project_collection_prefs?.[root] ?? "default" };
}
