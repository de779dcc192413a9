/**
 * Which queue tickets may run. A ticket pu wrote for its person (`pu ticket create`) is
 * trusted as written; one that came any other way (committed in a cloned repository,
 * dropped into `queue/` by hand, edited since) waits in `queue/` until `pu trust`.
 */
import type { Ticket } from "@pu/core/ticket";
import { isTrusted, ticketTrustItem, untrustedTicketMessage, type TrustFile } from "@pu/core/trust";
import type { TicketProblem, TicketView } from "@pu/ipc/protocol";
import type { EngineState } from "../../state.js";

/** The ticket's own fields, without what a view adds (its folder, path, project). */
function ticketOf(view: TicketView & { project?: string }): Ticket {
  const { state: _state, path: _path, project: _project, ...ticket } = view;
  return ticket;
}

function trustedIn(record: TrustFile | undefined, root: string, view: TicketView): boolean {
  return record !== undefined && isTrusted(record, root, ticketTrustItem(root, ticketOf(view), view.path));
}

/** The ids of `tickets` not trusted in `root` (all of them when trust.json cannot be read). */
export async function untrustedTicketIds(state: EngineState, root: string, tickets: readonly TicketView[]): Promise<Set<string>> {
  if (tickets.length === 0) return new Set();
  const record = await state.trust.read().catch((err: unknown) => {
    state.log.event("trust_unreadable", { file: state.trust.file, error: err });
    return undefined;
  });
  return new Set(tickets.filter((t) => !trustedIn(record, root, t)).map((t) => t.id));
}

/** One problem line per untrusted ticket, for `pu queue` and `pu ticket list`. */
export async function untrustedTicketProblems(state: EngineState, root: string, tickets: readonly TicketView[]): Promise<TicketProblem[]> {
  const untrusted = await untrustedTicketIds(state, root, tickets);
  return tickets.filter((t) => untrusted.has(t.id)).map((t) => ({ file: t.path, message: untrustedTicketMessage(t.id) }));
}

/** Whether a ticket being worked is still the one that was trusted (a hand edit since asks again). */
export async function ticketStillTrusted(state: EngineState, root: string, view: TicketView): Promise<boolean> {
  return (await untrustedTicketIds(state, root, [view])).size === 0;
}
