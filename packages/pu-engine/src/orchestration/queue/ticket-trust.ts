/**
 * Which queue tickets may run. A ticket pu wrote for its person (`pu ticket create`) is
 * trusted as written; one that came any other way (committed in a cloned repository,
 * dropped into `queue/` by hand, edited since) waits in `queue/` until `pu trust`.
 *
 * A trust.json pu cannot read says nothing about any ticket: it is its own answer
 * (`unreadable`), never "untrusted", so a ticket being worked is not failed as edited by hand
 * for a file that only needs fixing.
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

/** trust.json as read once, or why it cannot be read (the message names the file). */
export type TrustRead = { record: TrustFile } | { unreadable: string };

/**
 * trust.json for one pass over several projects' tickets (a dispatch pass, `pu queue`): read on
 * first use, then the same answer for every project of the pass.
 */
export function trustForPass(state: EngineState): () => Promise<TrustRead> {
  let read: Promise<TrustRead> | undefined;
  return () => (read ??= readTrust(state));
}

/** trust.json, or why it cannot be read (the message names the file). */
async function readTrust(state: EngineState): Promise<TrustRead> {
  try {
    return { record: await state.trust.read() };
  } catch (err) {
    state.log.event("trust_unreadable", { file: state.trust.file, error: err });
    const message = err instanceof Error ? err.message : String(err);
    return { unreadable: message.includes(state.trust.file) ? message : `${state.trust.file}: ${message}` };
  }
}

/** Why trust.json cannot be read, or undefined when it can. */
export async function trustFileProblem(state: EngineState): Promise<string | undefined> {
  const read = await readTrust(state);
  return "unreadable" in read ? read.unreadable : undefined;
}

/** The ids of `tickets` not trusted in `root` (all of them when trust.json cannot be read: none may start). */
export async function untrustedTicketIds(state: EngineState, root: string, tickets: readonly TicketView[], trust = trustForPass(state)): Promise<Set<string>> {
  if (tickets.length === 0) return new Set();
  const read = await trust();
  if ("unreadable" in read) return new Set(tickets.map((t) => t.id));
  return untrustedIn(read.record, root, tickets);
}

function untrustedIn(record: TrustFile, root: string, tickets: readonly TicketView[]): Set<string> {
  return new Set(tickets.filter((t) => !isTrusted(record, root, ticketTrustItem(root, ticketOf(t), t.path))).map((t) => t.id));
}

/** One problem line per ticket that may not start, for `pu queue` and `pu ticket list`. */
export async function untrustedTicketProblems(state: EngineState, root: string, tickets: readonly TicketView[], trust = trustForPass(state)): Promise<TicketProblem[]> {
  if (tickets.length === 0) return [];
  const read = await trust();
  // Not the ticket's doing: `pu trust` would not help until the file is fixed.
  if ("unreadable" in read) return tickets.map((t) => ({ file: t.path, message: `${t.id}: not started: trust.json cannot be read: ${read.unreadable}` }));
  const untrusted = untrustedIn(read.record, root, tickets);
  return tickets.filter((t) => untrusted.has(t.id)).map((t) => ({ file: t.path, message: untrustedTicketMessage(t.id) }));
}

/** Whether a ticket being worked is still the one that was trusted (a hand edit since asks again), or why that cannot be told. */
export async function ticketTrust(state: EngineState, root: string, view: TicketView): Promise<"trusted" | "edited" | { unreadable: string }> {
  const read = await readTrust(state);
  if ("unreadable" in read) return { unreadable: read.unreadable };
  return isTrusted(read.record, root, ticketTrustItem(root, ticketOf(view), view.path)) ? "trusted" : "edited";
}
