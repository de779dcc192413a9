// The manifest (.pu/manifest.json) schema, per spec/manifest-schema.txt, plus the
// canonical serializer. Objects are loose so fields written by a newer pu (or the
// engine's own extras such as `pidStartTime`) survive a read-modify-write cycle.
import { z } from "zod";
import { PuError } from "./errors.js";

export const MANIFEST_VERSION = 1;

export const AGENT_STATUSES = ["streaming", "waiting", "broken"] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

// Older writers stored finer-grained states; they collapse onto the three current ones.
const LEGACY_AGENT_STATUS: Record<string, AgentStatus> = {
  streaming: "streaming",
  waiting: "waiting",
  broken: "broken",
  spawning: "streaming",
  running: "streaming",
  idle: "waiting",
  suspended: "waiting",
  completed: "broken",
  failed: "broken",
  killed: "broken",
  lost: "broken",
};

export const AgentStatusSchema = z
  .enum(Object.keys(LEGACY_AGENT_STATUS) as [string, ...string[]], {
    error: (issue) =>
      `unknown agent status ${JSON.stringify(issue.input)} (expected streaming, waiting or broken)`,
  })
  .transform((value): AgentStatus => LEGACY_AGENT_STATUS[value] as AgentStatus);

export const WorktreeStatusSchema = z.enum(["active", "merging", "merged", "failed", "cleaned"]);
export type WorktreeStatus = z.infer<typeof WorktreeStatusSchema>;

export const TriggerStateSchema = z.enum(["active", "gating", "completed", "failed"]);
export type TriggerState = z.infer<typeof TriggerStateSchema>;

const IsoDateTime = z.iso.datetime({ offset: true });

/** An optional field: absent or null on input, `undefined` in the parsed value. */
function optional<T extends z.ZodType>(schema: T) {
  return schema
    .nullish()
    .transform((value) => (value === null ? undefined : value) as z.output<T> | undefined)
    .optional();
}

export const AgentEntrySchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  // Any configured agent type name, not only the built-ins.
  agentType: z.string().min(1),
  status: AgentStatusSchema,
  prompt: optional(z.string()),
  startedAt: IsoDateTime,
  completedAt: optional(IsoDateTime),
  exitCode: optional(z.number().int()),
  error: optional(z.string()),
  /**
   * pu's orchestrator that stopped the agent because its part was done (`queue`, `group`,
   * `plan`): its exit is that stop, not a failure. Absent for every other exit.
   */
  finishedBy: optional(z.string()),
  /**
   * The agent that took over this one's work when its group or plan started the work again
   * after a daemon restart: this entry (benched by the stop) is ended, never to be resumed
   * beside its successor in the same worktree. Absent for every other agent.
   */
  replacedBy: optional(z.string()),
  pid: optional(z.number().int()),
  /** The pid's start time (clock ticks since boot): tells the agent from a later process reusing the pid. */
  pidStartTime: optional(z.string()),
  sessionId: optional(z.string()),
  suspended: optional(z.boolean()),
  suspendedAt: optional(IsoDateTime),
  command: optional(z.string()),
  planMode: optional(z.boolean()),
  /** Variables given with `pu spawn --env`, set again when the agent is resumed. */
  env: optional(z.record(z.string(), z.string())),
  /** pu's seal over `command` and `env` (HMAC, key in $PU_HOME): a resume runs them only under a matching one. */
  launchSeal: optional(z.string()),
  triggerName: optional(z.string()),
  triggerSeqIndex: optional(z.number().int()),
  triggerState: optional(TriggerStateSchema),
  triggerTotal: optional(z.number().int()),
  gateAttempts: optional(z.number().int()),
  noTrigger: optional(z.boolean()),
  /** The vars a trigger was bound with (`--var`), so `{{VAR}}` survives a daemon restart. */
  triggerVars: optional(z.record(z.string(), z.string())),
});
export type AgentEntry = z.infer<typeof AgentEntrySchema>;

export const WorktreeEntrySchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  path: z.string(),
  branch: z.string(),
  baseBranch: optional(z.string()),
  status: WorktreeStatusSchema,
  agents: z.record(z.string(), AgentEntrySchema),
  createdAt: IsoDateTime,
  mergedAt: optional(IsoDateTime),
  /** Why the last merge failed or was rolled back (a conflict names its files). */
  error: optional(z.string()),
});
export type WorktreeEntry = z.infer<typeof WorktreeEntrySchema>;

export const ManifestSchema = z.looseObject({
  version: z.literal(MANIFEST_VERSION, {
    error: (issue) => `unsupported manifest version ${JSON.stringify(issue.input)} (this pu reads version ${MANIFEST_VERSION})`,
  }),
  projectRoot: z.string(),
  worktrees: z.record(z.string(), WorktreeEntrySchema),
  agents: z.record(z.string(), AgentEntrySchema),
  createdAt: IsoDateTime,
  updatedAt: IsoDateTime,
});
export type Manifest = z.infer<typeof ManifestSchema>;

/** Formats the first zod issue as `path: message`, the path dotted (record keys included). */
export function describeFirstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid manifest";
  const path = issue.path.map(String).join(".");
  return path ? `${path}: ${issue.message}` : issue.message;
}

function describeJsonError(text: string, error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ");
  const match = /at position (\d+)/.exec(message);
  let position: number | undefined = match ? Number(match[1]) : undefined;
  if (position === undefined && /Unexpected end/i.test(message)) position = text.length;
  if (position === undefined) return `not valid JSON (${message})`;
  const before = text.slice(0, position);
  const line = before.split("\n").length;
  const column = position - before.lastIndexOf("\n");
  return `not valid JSON at line ${line}, column ${column} (${message})`;
}

/** Parses and validates manifest text; throws MANIFEST_INVALID naming the file and what is wrong. */
export function parseManifest(text: string, filePath: string): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new PuError("MANIFEST_INVALID", `manifest ${filePath} is ${describeJsonError(text, error)}`, {
      cause: error,
    });
  }
  const result = ManifestSchema.safeParse(raw);
  if (!result.success) {
    throw new PuError("MANIFEST_INVALID", `manifest ${filePath} is invalid: ${describeFirstIssue(result.error)}`, {
      cause: result.error,
    });
  }
  return result.data;
}

const ROOT_REQUIRED = ["version", "projectRoot", "worktrees", "agents", "createdAt", "updatedAt"];
const WORKTREE_REQUIRED = ["id", "name", "path", "branch", "status", "agents", "createdAt"];
const AGENT_REQUIRED = ["id", "name", "agentType", "status", "startedAt"];

type Plain = Record<string, unknown>;

/**
 * Copies `source` with known keys first in schema order, then unknown keys in their
 * existing order. Known optional keys holding null/undefined/false are dropped, as the
 * spec says; unknown keys are kept verbatim (we do not know their semantics).
 */
function ordered(
  source: Plain,
  knownKeys: readonly string[],
  requiredKeys: readonly string[],
  nested: Record<string, (value: unknown) => unknown> = {},
): Plain {
  const out: Plain = {};
  const known = new Set(knownKeys);
  for (const key of knownKeys) {
    if (!(key in source)) continue;
    const value = source[key];
    const isRequired = requiredKeys.includes(key);
    if (!isRequired && (value === null || value === undefined || value === false)) continue;
    const transform = nested[key];
    out[key] = transform ? transform(value) : value;
  }
  for (const [key, value] of Object.entries(source)) {
    if (!known.has(key) && value !== undefined) out[key] = value;
  }
  return out;
}

function mapRecord(value: unknown, each: (entry: Plain) => Plain): Plain {
  const out: Plain = {};
  for (const [key, entry] of Object.entries((value ?? {}) as Record<string, Plain>)) out[key] = each(entry);
  return out;
}

const orderAgent = (agent: Plain): Plain =>
  ordered(agent, Object.keys(AgentEntrySchema.shape), AGENT_REQUIRED);

const orderWorktree = (worktree: Plain): Plain =>
  ordered(worktree, Object.keys(WorktreeEntrySchema.shape), WORKTREE_REQUIRED, {
    agents: (agents) => mapRecord(agents, orderAgent),
  });

/** Canonical manifest text: stable key order, empty optionals omitted, 2-space JSON plus newline. */
export function serializeManifest(manifest: Manifest): string {
  const root = ordered(manifest as Plain, Object.keys(ManifestSchema.shape), ROOT_REQUIRED, {
    worktrees: (worktrees) => mapRecord(worktrees, orderWorktree),
    agents: (agents) => mapRecord(agents, orderAgent),
  });
  return `${JSON.stringify(root, null, 2)}\n`;
}

export function newManifest(projectRoot: string, now: Date = new Date()): Manifest {
  const stamp = now.toISOString();
  return {
    version: MANIFEST_VERSION,
    projectRoot,
    worktrees: {},
    agents: {},
    createdAt: stamp,
    updatedAt: stamp,
  };
}

export interface AgentLocation {
  agent: AgentEntry;
  /** The worktree holding the agent; absent for a root-level agent. */
  worktree?: WorktreeEntry;
}

export function findAgent(manifest: Manifest, agentId: string): AgentLocation | undefined {
  const rootAgent = Object.hasOwn(manifest.agents, agentId) ? manifest.agents[agentId] : undefined;
  if (rootAgent) return { agent: rootAgent };
  for (const worktree of Object.values(manifest.worktrees)) {
    const agent = Object.hasOwn(worktree.agents, agentId) ? worktree.agents[agentId] : undefined;
    if (agent) return { agent, worktree };
  }
  return undefined;
}

/** Every agent: root agents first, then each worktree's agents, in manifest order. */
export function listAgents(manifest: Manifest): AgentLocation[] {
  const found: AgentLocation[] = Object.values(manifest.agents).map((agent) => ({ agent }));
  for (const worktree of Object.values(manifest.worktrees)) {
    for (const agent of Object.values(worktree.agents)) found.push({ agent, worktree });
  }
  return found;
}
