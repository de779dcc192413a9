// Work-queue tickets: markdown files with YAML frontmatter under `.pu/tickets/<state>/`, the
// folder being the ticket's state (a person sees the queue with `ls`, and can drop a
// hand-written ticket into `queue/`).
import { join } from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { z } from "zod";
import { FLAG_LIKE_MESSAGE, isFlagLike } from "./argv-value.js";
import { PuError } from "./errors.js";
import { puDir } from "./paths.js";
import { splitFrontmatter } from "./template.js";

export const TICKET_STATES = ["queue", "in-progress", "done"] as const;
export type TicketState = (typeof TICKET_STATES)[number];

export const PRIORITIES = ["P0", "P1", "P2", "P3"] as const;
export type Priority = (typeof PRIORITIES)[number];

/** A ticket type is a workflow name: upper-case letters, e.g. FEAT, FIX, TASK, SPIKE. */
const TicketType = z.string().regex(/^[A-Z][A-Z0-9]{0,15}$/, "must be 1-16 upper-case letters or digits, starting with a letter (FEAT, FIX…)");
const TICKET_ID = /^([A-Z][A-Z0-9]{0,15})-(\d{4,})$/;

export const TicketFrontmatterSchema = z.looseObject({
  id: z.string().regex(TICKET_ID, "must be TYPE-NNNN, e.g. FEAT-0007"),
  type: TicketType,
  title: z.string().min(1).max(200),
  priority: z.enum(PRIORITIES).default("P2"),
  created_at: z.iso.datetime({ offset: true }),
  agent: z.string().min(1).refine((v) => !isFlagLike(v), FLAG_LIKE_MESSAGE).optional(),
  /** Passed as `--model VALUE`: never a value the agent CLI would read as a flag. */
  model: z.string().min(1).refine((v) => !isFlagLike(v), FLAG_LIKE_MESSAGE).optional(),
  /** Ticket variables for the workflow's prompt templates (`{{NAME}}`). */
  vars: z.record(z.string(), z.string()).optional(),
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

/** `FEAT-0007`: the type and the next number after every id of that type the project has used. */
export function nextTicketId(type: string, existingIds: Iterable<string>): string {
  let highest = 0;
  for (const id of existingIds) {
    const match = TICKET_ID.exec(id);
    if (match && match[1] === type) highest = Math.max(highest, Number(match[2]));
  }
  return `${type}-${String(highest + 1).padStart(4, "0")}`;
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
