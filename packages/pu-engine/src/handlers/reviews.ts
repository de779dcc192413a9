// review_list, review_approve, review_reject: a person's decision on a ticket waiting for one.
import { checkPromptText } from "@pu/core/prompt-text";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type ReviewsContext = Pick<EngineServices, "queue" | "state">;

export async function handleReviewList(services: ReviewsContext, req: RequestOf<"review_list">): Promise<ResultOf<"review_list">> {
  const root = req.projectRoot !== undefined ? await services.state.project(req.projectRoot) : undefined;
  services.queue.store.ensureUsable();
  return { reviews: services.queue.reviews(root) };
}

export async function handleReviewApprove(services: ReviewsContext, req: RequestOf<"review_approve">): Promise<ResultOf<"review_approve">> {
  const root = await services.state.project(req.projectRoot);
  const step = await services.queue.decide(root, req.ticketId, { kind: "approve", ...(req.note !== undefined ? { note: req.note } : {}) });
  return { ticketId: req.ticketId, step };
}

export async function handleReviewReject(services: ReviewsContext, req: RequestOf<"review_reject">): Promise<ResultOf<"review_reject">> {
  const root = await services.state.project(req.projectRoot);
  // The reason is typed into the ticket's agent, like `pu send` text.
  const reason = checkPromptText(req.reason, "--reason");
  const current = await services.queue.decide(root, req.ticketId, { kind: "reject", reason, ...(req.step !== undefined ? { step: req.step } : {}) });
  return { ticketId: req.ticketId, step: req.step ?? current ?? "" };
}
