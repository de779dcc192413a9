/**
 * Ticket files on disk: `.pu/tickets/{queue,in-progress,done}/<ID>.md`, the folder being the
 * state. Moves never replace a file (a hard link, then the old name removed), so a ticket is in
 * one folder at every moment and a hand-dropped file of a used id is never written over. A file
 * that does not parse, is too large, or reuses an id is reported (file and why) and left where it is.
 */
import { watch, type FSWatcher } from "node:fs";
import { link, mkdir, readdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import writeFileAtomic from "write-file-atomic";
import { PuError } from "@pu/core/errors";
import {
  checkTicketSize,
  compareTickets,
  duplicateTicketIds,
  nextTicketId,
  parseTicket,
  serializeTicket,
  ticketIdOfFileName,
  ticketPath,
  ticketsDir,
  TICKET_LOOKUP_ORDER,
  TICKET_STATES,
  type Ticket,
  type TicketState,
} from "@pu/core/ticket";
import type { TicketProblem, TicketSummary, TicketView } from "@pu/ipc/protocol";

export interface TicketScan {
  tickets: TicketView[];
  problems: TicketProblem[];
}

export async function ensureTicketDirs(root: string): Promise<void> {
  for (const state of TICKET_STATES) await mkdir(ticketsDir(root, state), { recursive: true });
}

/** A ticket as lists show it: everything but the body (a list of large tickets must still fit a reply). */
export function ticketSummary(ticket: TicketView): TicketSummary {
  const { description: _description, ...summary } = ticket;
  return summary;
}

interface TicketFile {
  state: TicketState;
  name: string;
  file: string;
  id: string | undefined;
}

async function listTicketFiles(root: string): Promise<TicketFile[]> {
  const files: TicketFile[] = [];
  for (const state of TICKET_STATES) {
    const dir = ticketsDir(root, state);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw err;
    }
    for (const name of names.filter((n) => n.endsWith(".md")).sort()) files.push({ state, name, file: path.join(dir, name), id: ticketIdOfFileName(name) });
  }
  return files;
}

async function inodeOf(file: string): Promise<string | undefined> {
  try {
    const info = await stat(file);
    return `${info.dev}:${info.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * Files of an id that is in more than one folder: refused (file → why), or, when both names are
 * one file (a move between its link and its unlink, or a crash in between), hidden.
 */
async function duplicateFiles(root: string, files: TicketFile[]): Promise<{ refused: Map<string, string>; hidden: Set<string> }> {
  const refused = new Map<string, string>();
  const hidden = new Set<string>();
  const withIds = files.flatMap((f) => (f.id !== undefined ? [{ state: f.state, id: f.id }] : []));
  for (const dup of duplicateTicketIds(withIds)) {
    const ownerFile = ticketPath(root, dup.owner, dup.id);
    const owner = await inodeOf(ownerFile);
    if (owner === undefined) continue; // moved meanwhile: the other is the only one now
    for (const state of dup.duplicates) {
      const other = ticketPath(root, state, dup.id);
      if ((await inodeOf(other)) === owner) hidden.add(other);
      else refused.set(other, `${other}: id ${dup.id} is already used by ${ownerFile}; this file is not read or run (rename or remove one of them)`);
    }
  }
  return { refused, hidden };
}

/** Every readable ticket in the given folders (queue ones in dispatch order), and the files that cannot be used. */
export async function scanTickets(root: string, states: readonly TicketState[] = TICKET_STATES): Promise<TicketScan> {
  const tickets: TicketView[] = [];
  const problems: TicketProblem[] = [];
  // Every folder is listed, whichever were asked for: a duplicate id is one across folders.
  const files = await listTicketFiles(root);
  const { refused, hidden } = await duplicateFiles(root, files);
  for (const { state, name, file } of files) {
    if (!states.includes(state) || hidden.has(file)) continue;
    const duplicate = refused.get(file);
    if (duplicate !== undefined) {
      problems.push({ file, message: duplicate });
      continue;
    }
    try {
      const ticket = await readTicketCached(file);
      if (`${ticket.id}.md` !== name) throw new PuError("CONFIG_ERROR", `${file}: id: ${ticket.id} does not match the file name ${name}`);
      tickets.push({ ...ticket, state, path: file });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue; // moved meanwhile
      problems.push({ file, message: (err as Error).message });
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
  if (!info.isFile()) throw new PuError("CONFIG_ERROR", `${file}: not a regular file`);
  // Refused before reading: a 20 MB ticket must not be read, sent or typed.
  checkTicketSize(info.size, file);
  const cached = parsedCache.get(file);
  if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.ticket;
  const ticket = parseTicket(await readFile(file, "utf8"), file);
  if (parsedCache.size >= PARSED_CACHE_MAX) parsedCache.clear();
  parsedCache.set(file, { mtimeMs: info.mtimeMs, size: info.size, ticket });
  return ticket;
}

/** The ticket of an id: the one in in-progress/, else done/, else queue/ (a dropped duplicate never shadows it). */
export async function findTicket(root: string, id: string): Promise<TicketView> {
  for (const state of TICKET_LOOKUP_ORDER) {
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
  max_cost?: number;
  max_tokens?: number;
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
    const text = serializeTicket(ticket);
    checkTicketSize(Buffer.byteLength(text), `ticket ${id}`, "INVALID_ARGUMENT");
    // Parsed back before it is written: a ticket pu writes must be one pu reads.
    const readBack = parseTicket(text, file);
    await beforeWrite?.(readBack, file);
    await writeFile(file, text, { flag: "wx" });
    return { ...ticket, state: "queue" as const, path: file };
  });
  creating.set(root, run);
  return run;
}

/**
 * Moves a ticket to another folder; returns its new path. Never replaces a file: a ticket of the
 * same id already there (dropped by hand) is an INVALID_STATE naming both files. The move is a
 * hard link and then an unlink, so a crash in between leaves two names of one file, which scans
 * show once and the next move of the ticket settles.
 */
export async function moveTicket(root: string, id: string, from: TicketState, to: TicketState): Promise<string> {
  const source = ticketPath(root, from, id);
  const target = ticketPath(root, to, id);
  await mkdir(path.dirname(target), { recursive: true });
  const taken = () => new PuError("INVALID_STATE", `${source} was not moved: ${target} already exists (a ticket id is never used twice; rename or remove one of them)`);
  try {
    await link(source, target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") {
      const [a, b] = await Promise.all([inodeOf(source), inodeOf(target)]);
      if (a === undefined || a !== b) throw taken();
    } else if (code === "ENOENT") {
      throw err;
    } else {
      // A file system without hard links: a rename, once the target is seen to be free.
      if ((await inodeOf(target)) !== undefined) throw taken();
      await rename(source, target);
      return target;
    }
  }
  await unlink(source);
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
  // Atomic: a crash mid-write must not leave a person's ticket cut short.
  await writeFileAtomic(file, serializeTicket({ ...ticket, history: [...history, { at: new Date().toISOString(), ...clean }] }));
}

/** Sets one frontmatter field of a ticket, wherever it is. */
export async function writeTicketField(root: string, id: string, field: string, value: unknown): Promise<void> {
  const { state: _state, path: file, ...ticket } = await findTicket(root, id);
  await writeFileAtomic(file, serializeTicket({ ...ticket, [field]: value }));
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
