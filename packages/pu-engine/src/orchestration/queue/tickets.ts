/**
 * Ticket files on disk: `.pu/tickets/{queue,in-progress,done}/<ID>.md`, the folder being the
 * state. Moves are renames, so a ticket is in exactly one folder at every moment. A file that
 * does not parse is reported (file and field) and left where it is.
 */
import { watch, type FSWatcher } from "node:fs";
import { mkdir, readdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { PuError } from "@pu/core/errors";
import {
  compareTickets,
  nextTicketId,
  parseTicket,
  serializeTicket,
  ticketPath,
  ticketsDir,
  TICKET_STATES,
  type Ticket,
  type TicketState,
} from "@pu/core/ticket";
import type { TicketProblem, TicketView } from "@pu/ipc/protocol";

export interface TicketScan {
  tickets: TicketView[];
  problems: TicketProblem[];
}

export async function ensureTicketDirs(root: string): Promise<void> {
  for (const state of TICKET_STATES) await mkdir(ticketsDir(root, state), { recursive: true });
}

/** Every readable ticket in the given folders (queue ones in dispatch order), and the unreadable files. */
export async function scanTickets(root: string, states: readonly TicketState[] = TICKET_STATES): Promise<TicketScan> {
  const tickets: TicketView[] = [];
  const problems: TicketProblem[] = [];
  for (const state of states) {
    const dir = ticketsDir(root, state);
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => n.endsWith(".md"));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw err;
    }
    for (const name of names.sort()) {
      const file = path.join(dir, name);
      try {
        const ticket = await readTicketCached(file);
        if (`${ticket.id}.md` !== name) throw new PuError("CONFIG_ERROR", `${file}: id: ${ticket.id} does not match the file name ${name}`);
        tickets.push({ ...ticket, state, path: file });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") continue; // moved meanwhile
        problems.push({ file, message: (err as Error).message });
      }
    }
  }
  tickets.sort((a, b) => TICKET_STATES.indexOf(a.state) - TICKET_STATES.indexOf(b.state) || compareTickets(a, b));
  return { tickets, problems };
}

// Parsed tickets by file, reused while size and mtime are unchanged: dispatch rescans the
// queue folder on every event, and a long queue would otherwise be re-parsed each time.
const parsedCache = new Map<string, { mtimeMs: number; size: number; ticket: Ticket }>();
const PARSED_CACHE_MAX = 10_000;

async function readTicketCached(file: string): Promise<Ticket> {
  const info = await stat(file);
  const cached = parsedCache.get(file);
  if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.ticket;
  const ticket = parseTicket(await readFile(file, "utf8"), file);
  if (parsedCache.size >= PARSED_CACHE_MAX) parsedCache.clear();
  parsedCache.set(file, { mtimeMs: info.mtimeMs, size: info.size, ticket });
  return ticket;
}

export async function findTicket(root: string, id: string): Promise<TicketView> {
  for (const state of TICKET_STATES) {
    const file = ticketPath(root, state, id);
    let ticket: Ticket;
    try {
      ticket = await readTicketCached(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw err;
    }
    return { ...ticket, state, path: file };
  }
  throw new PuError("NOT_FOUND", `no ticket ${id} in ${root}`);
}

/** Ids already used in the project (any folder, readable or not), so a number is never reused. */
async function usedIds(root: string): Promise<string[]> {
  const ids: string[] = [];
  for (const state of TICKET_STATES) {
    const names = await readdir(ticketsDir(root, state)).catch(() => []);
    ids.push(...names.filter((n) => n.endsWith(".md")).map((n) => n.slice(0, -3)));
  }
  return ids;
}

// Creation is serialized per project so two creates never pick the same number.
const creating = new Map<string, Promise<unknown>>();

export interface NewTicket {
  type: string;
  title: string;
  priority: Ticket["priority"];
  description: string;
  agent?: string;
  model?: string;
}

/**
 * Writes a new ticket into `queue/`. `beforeWrite` gets the ticket as pu will read it back,
 * before the file exists (the dispatcher may see the file the moment it is written).
 */
export function createTicket(root: string, fields: NewTicket, beforeWrite?: (ticket: Ticket, file: string) => Promise<void>): Promise<TicketView> {
  const run = (creating.get(root) ?? Promise.resolve()).catch(() => undefined).then(async () => {
    await ensureTicketDirs(root);
    const id = nextTicketId(fields.type, await usedIds(root));
    const ticket: Ticket = { id, ...fields, created_at: new Date().toISOString() };
    const file = ticketPath(root, "queue", id);
    // Parsed back before it is written: a ticket pu writes must be one pu reads.
    const readBack = parseTicket(serializeTicket(ticket), file);
    await beforeWrite?.(readBack, file);
    await writeFile(file, serializeTicket(ticket), { flag: "wx" });
    return { ...ticket, state: "queue" as const, path: file };
  });
  creating.set(root, run);
  return run;
}

/** Moves a ticket to another folder (a rename); returns its new path. */
export async function moveTicket(root: string, id: string, from: TicketState, to: TicketState): Promise<string> {
  const target = ticketPath(root, to, id);
  await mkdir(path.dirname(target), { recursive: true });
  await rename(ticketPath(root, from, id), target);
  return target;
}

export interface HistoryEntry {
  at: string;
  event: string;
  step?: string;
  note?: string;
  by?: string;
}

/** Appends to the ticket's `history` frontmatter (who approved what and when, and what happened). */
export async function appendHistory(root: string, id: string, entry: Omit<HistoryEntry, "at">): Promise<void> {
  const found = await findTicket(root, id);
  const { state: _state, path: file, ...ticket } = found;
  const history = Array.isArray(ticket.history) ? (ticket.history as HistoryEntry[]) : [];
  const clean = Object.fromEntries(Object.entries(entry).filter(([, v]) => v !== undefined)) as Omit<HistoryEntry, "at">;
  await writeFile(file, serializeTicket({ ...ticket, history: [...history, { at: new Date().toISOString(), ...clean }] }));
}

/** Sets one frontmatter field of a ticket, wherever it is. */
export async function writeTicketField(root: string, id: string, field: string, value: unknown): Promise<void> {
  const { state: _state, path: file, ...ticket } = await findTicket(root, id);
  await writeFile(file, serializeTicket({ ...ticket, [field]: value }));
}

/** Calls `onChange` when files appear in a project's `queue/` folder (a hand-dropped ticket). */
export function watchQueueFolder(root: string, onChange: () => void, onError: (err: unknown) => void): FSWatcher | undefined {
  try {
    const watcher = watch(ticketsDir(root, "queue"), () => onChange());
    watcher.on("error", onError);
    return watcher;
  } catch (err) {
    onError(err);
    return undefined;
  }
}
