// Work-queue tickets: markdown files with YAML frontmatter under `.pu/tickets/<state>/`, the
// folder being the ticket's state (a person sees the queue with `ls`, and can drop a
// hand-written ticket into `queue/`).
import { join } from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { z } from "zod";
import { FLAG_LIKE_MESSAGE, isFlagLike } from "./argv-value.js";
import { PuError } from "./errors.js";
import { escapeControlCharacters } from "./names.js";
import { puDir } from "./paths.js";
import { splitFrontmatter } from "./template.js";

export const TICKET_STATES = ["queue", "in-progress", "done"] as const;
export type TicketState = (typeof TICKET_STATES)[number];

export const PRIORITIES = ["P0", "P1", "P2", "P3"] as const;
export type Priority = (typeof PRIORITIES)[number];

/** A ticket type is a workflow name: upper-case letters, e.g. FEAT, FIX, TASK, SPIKE. */
const TicketType = z.string().regex(/^[A-Z][A-Z0-9]{0,15}$/, "must be 1-16 upper-case letters or digits, starting with a letter (FEAT, FIX…)");
// The number has 4 to 9 digits: bounded, so it is always an exact integer (a 23-digit number
// read as a float came back as "1e+23" and broke every later id of its type).
const TICKET_ID = /^([A-Z][A-Z0-9]{0,15})-(\d{4,9})$/;
const MAX_TICKET_NUMBER = 999_999_999;

/**
 * A ticket file is read whole, its title and description typed into an agent and sent in
 * replies: past this it is refused like any other bad file (reported, never dispatched).
 */
export const MAX_TICKET_BYTES = 1024 * 1024;

// C0 and C1 controls, DEL: a title is one line of printable text (it is typed into agents and printed).
const TITLE_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function titleProblem(title: string): string | undefined {
  const match = TITLE_CONTROL.exec(title);
  return match ? `contains the control character ${escapeControlCharacters(match[0])} at position ${match.index + 1}; a title is one line of printable text` : undefined;
}

const TicketTitle = z
  .string()
  .min(1)
  .max(200)
  .superRefine((title, ctx) => {
    const problem = titleProblem(title);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

/** The title of a new ticket; INVALID_ARGUMENT naming a control character in it. */
export function checkTicketTitle(title: string): string {
  const problem = titleProblem(title);
  if (problem) throw new PuError("INVALID_ARGUMENT", `the title ${problem}`);
  return title;
}

export const TicketFrontmatterSchema = z.looseObject({
  id: z.string().regex(TICKET_ID, "must be TYPE-NNNN with 4 to 9 digits, e.g. FEAT-0007"),
  type: TicketType,
  title: TicketTitle,
  priority: z.enum(PRIORITIES).default("P2"),
  created_at: z.iso.datetime({ offset: true }),
  agent: z.string().min(1).refine((v) => !isFlagLike(v), FLAG_LIKE_MESSAGE).optional(),
  /** Passed as `--model VALUE`: never a value the agent CLI would read as a flag. */
  model: z.string().min(1).refine((v) => !isFlagLike(v), FLAG_LIKE_MESSAGE).optional(),
  /** Ticket variables for the workflow's prompt templates (`{{NAME}}`). */
  vars: z.record(z.string(), z.string()).optional(),
  /** The ticket's budget over all its steps (USD, and tokens: all the provider reported). */
  max_cost: z.number().positive().optional(),
  max_tokens: z.number().int().positive().optional(),
});
export type TicketFrontmatter = z.infer<typeof TicketFrontmatterSchema>;

export interface Ticket extends TicketFrontmatter {
  /** The markdown body: the description. */
  description: string;
}

/** Reads a ticket file; CONFIG_ERROR naming the file and the field (the caller leaves the file where it is). */
export function parseTicket(content: string, path: string): Ticket {
  const { yaml, body } = splitFrontmatter(content, path);
  if (yaml === undefined) throw new PuError("CONFIG_ERROR", `${path}: a ticket starts with --- frontmatter (id, type, title, created_at)`);
  let raw: unknown;
  try {
    raw = parseYaml(yaml);
  } catch (error) {
    throw new PuError("CONFIG_ERROR", `${path}: frontmatter is not valid YAML (${(error as Error).message.split("\n")[0]})`);
  }
  const parsed = TicketFrontmatterSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join(".") || "(frontmatter)";
    throw new PuError("CONFIG_ERROR", `${path}: ${field}: ${issue?.message ?? "invalid"}`);
  }
  const { type } = parsed.data;
  if (!parsed.data.id.startsWith(`${type}-`)) {
    throw new PuError("CONFIG_ERROR", `${path}: id: ${parsed.data.id} does not match type ${type} (expected ${type}-NNNN)`);
  }
  return { ...parsed.data, description: body.replace(/^\n+/, "") };
}

export function serializeTicket(ticket: Ticket): string {
  const { description, ...frontmatter } = ticket;
  return `---\n${stringifyYaml(frontmatter).trimEnd()}\n---\n\n${description.trimEnd()}\n`;
}

/**
 * `FEAT-0007`: the type and the next number after every id of that type the project has used.
 * Names that are not ids (a 23-digit number, say) are not ids of the type and count for nothing.
 */
export function nextTicketId(type: string, existingIds: Iterable<string>): string {
  let highest = 0;
  for (const id of existingIds) {
    const match = TICKET_ID.exec(id);
    if (match && match[1] === type) highest = Math.max(highest, Number.parseInt(match[2] as string, 10));
  }
  if (highest >= MAX_TICKET_NUMBER) {
    throw new PuError("INVALID_STATE", `every ${type} ticket number up to ${type}-${MAX_TICKET_NUMBER} is used; use another ticket type`);
  }
  return `${type}-${String(highest + 1).padStart(4, "0")}`;
}

/** The id of a ticket file's name (`FEAT-0007.md`), or undefined for any other name. */
export function ticketIdOfFileName(name: string): string | undefined {
  if (!name.endsWith(".md")) return undefined;
  const id = name.slice(0, -3);
  return TICKET_ID.test(id) ? id : undefined;
}

/**
 * A ticket id as a person typed it: `feat-0007` means FEAT-0007, anything else is kept as typed
 * (so an error quotes what was given, not an upper-cased `../../X`).
 */
export function ticketIdArgument(raw: string): string {
  const upper = raw.toUpperCase();
  return TICKET_ID.test(upper) ? upper : raw;
}

/** CONFIG_ERROR for a ticket file over MAX_TICKET_BYTES, naming the file and its size. */
export function checkTicketSize(bytes: number, path: string, code: "CONFIG_ERROR" | "INVALID_ARGUMENT" = "CONFIG_ERROR"): void {
  if (bytes <= MAX_TICKET_BYTES) return;
  const size = bytes >= 1_000_000 ? `${(bytes / 1_000_000).toFixed(1)} MB` : `${Math.ceil(bytes / 1000)} kB`;
  throw new PuError(code, `${path}: ${size}, over the 1 MiB limit of a ticket file (put long material in a file the description names)`);
}

/**
 * Where an id's ticket is looked for: a file in in-progress/ or done/ is the one pu worked on; a
 * file of the same id in queue/ can only have been dropped there by hand.
 */
export const TICKET_LOOKUP_ORDER: readonly TicketState[] = ["in-progress", "done", "queue"];

/** Where the tickets of one id are: the folder that is its state and any other copies. */
export interface TicketIdFiles {
  id: string;
  /** The ticket pu works with: in-progress, else done, else queue (pu never writes an id twice). */
  owner: TicketState;
  /** Files of the same id in other folders: put there by hand, refused (never read, run or moved onto). */
  duplicates: TicketState[];
}

/**
 * The ids found in more than one state folder. pu never creates an id that is in use, so a second
 * file of an id was put there by hand; the ticket pu already knows (in progress, else done) keeps
 * the id, and the other file is reported naming both.
 */
export function duplicateTicketIds(files: Iterable<{ state: TicketState; id: string }>): TicketIdFiles[] {
  const statesOf = new Map<string, Set<TicketState>>();
  for (const { state, id } of files) {
    const states = statesOf.get(id) ?? new Set<TicketState>();
    states.add(state);
    statesOf.set(id, states);
  }
  const duplicates: TicketIdFiles[] = [];
  for (const [id, states] of statesOf) {
    if (states.size < 2) continue;
    const owner = TICKET_LOOKUP_ORDER.find((s) => states.has(s)) as TicketState;
    duplicates.push({ id, owner, duplicates: TICKET_STATES.filter((s) => s !== owner && states.has(s)) });
  }
  return duplicates.sort((a, b) => a.id.localeCompare(b.id));
}

/** Dispatch order: priority (P0 first), then age (oldest first), then id. */
export function compareTickets(a: TicketFrontmatter, b: TicketFrontmatter): number {
  return (
    PRIORITIES.indexOf(a.priority) - PRIORITIES.indexOf(b.priority) ||
    Date.parse(a.created_at) - Date.parse(b.created_at) ||
    a.id.localeCompare(b.id)
  );
}

export function ticketsDir(root: string, state: TicketState): string {
  return join(puDir(root), "tickets", state);
}

export function ticketPath(root: string, state: TicketState, id: string): string {
  if (!TICKET_ID.test(id)) throw new PuError("INVALID_ARGUMENT", `ticket id "${id}" is not TYPE-NNNN (e.g. FEAT-0007)`);
  return join(ticketsDir(root, state), `${id}.md`);
}
