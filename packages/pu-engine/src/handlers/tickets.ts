// ticket_create, ticket_list, ticket_show, ticket_cancel: tickets are files; the queue service owns their work.
import { checkArgvValue } from "@pu/core/argv-value";
import { loadConfig, resolveAgentType } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { checkPromptText } from "@pu/core/prompt-text";
import { checkTicketTitle } from "@pu/core/ticket";
import { ticketTrustItem } from "@pu/core/trust";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

export type TicketsContext = Pick<EngineServices, "queue" | "state">;
import { untrustedTicketProblems } from "../orchestration/queue/ticket-trust.js";
import { createTicket, findTicket, scanTickets, ticketSummary } from "../orchestration/queue/tickets.js";

export async function handleTicketCreate(services: TicketsContext, req: RequestOf<"ticket_create">): Promise<ResultOf<"ticket_create">> {
  const root = await services.state.project(req.projectRoot);
  if (!/^[A-Z][A-Z0-9]{0,15}$/.test(req.ticketType)) {
    throw new PuError("INVALID_ARGUMENT", `ticket type "${req.ticketType}" must be upper-case letters or digits, starting with a letter (FEAT, FIX, TASK, SPIKE…)`);
  }
  // Checked now, not when the ticket is dispatched: the title and description are typed into an agent.
  const title = checkTicketTitle(req.title);
  const description = checkPromptText(req.description ?? "", "the description");
  if (req.agent !== undefined) checkArgvValue("agent", req.agent);
  if (req.model !== undefined) checkArgvValue("model", req.model);
  if (req.agent !== undefined) resolveAgentType(await loadConfig(root), req.agent);
  const ticket = await createTicket(
    root,
    {
    type: req.ticketType,
    title,
    priority: req.priority ?? "P2",
    description,
    ...(req.agent !== undefined ? { agent: req.agent } : {}),
    ...(req.model !== undefined ? { model: req.model } : {}),
    ...(req.maxCost !== undefined ? { max_cost: req.maxCost } : {}),
    ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
    },
    // Written through pu for its person (or by an agent of theirs): trusted as written; a later hand edit asks again.
    (written, file) => services.state.trust.trust(root, [ticketTrustItem(root, written, file)]),
  );
  await services.queue.watchProject(root);
  const outputOf = req.callerAgentId !== undefined ? await services.queue.recordOutputTicket(req.callerAgentId, ticket.id) : undefined;
  services.queue.kick("ticket created");
  const stopped = await services.queue.whyStopped();
  return { ticket, ...(outputOf !== undefined ? { outputOf } : {}), warnings: stopped !== undefined ? [stopped] : [] };
}

export async function handleTicketList(services: TicketsContext, req: RequestOf<"ticket_list">): Promise<ResultOf<"ticket_list">> {
  const root = await services.state.project(req.projectRoot);
  const scan = await scanTickets(root, req.state !== undefined ? [req.state] : undefined);
  const waiting = scan.tickets.filter((t) => t.state === "queue");
  return { tickets: scan.tickets.map(ticketSummary), problems: [...scan.problems, ...(await untrustedTicketProblems(services.state, root, waiting))] };
}

export async function handleTicketShow(services: TicketsContext, req: RequestOf<"ticket_show">): Promise<ResultOf<"ticket_show">> {
  const root = await services.state.project(req.projectRoot);
  const ticket = await findTicket(root, req.ticketId);
  const { state } = services.queue.store;
  const agent = state.agents.find((a) => a.project === root && a.ticket_id === ticket.id);
  const completed = [...state.completed].reverse().find((c) => c.project === root && c.ticket_id === ticket.id);
  return { ticket, ...(agent ? { agent } : {}), ...(completed ? { completed } : {}) };
}

export async function handleTicketCancel(services: TicketsContext, req: RequestOf<"ticket_cancel">): Promise<ResultOf<"ticket_cancel">> {
  const root = await services.state.project(req.projectRoot);
  const result = await services.queue.cancel(root, req.ticketId);
  return { ticketId: req.ticketId, ...result };
}
