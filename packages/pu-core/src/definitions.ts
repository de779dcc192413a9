// Definition files: templates, agent definitions, swarms, triggers and schedules.
// Each lives in `<root>/.pu/<dir>/` (local) or `$PU_HOME/<dir>/` (global); a local
// file hides a global one of the same name. Files are validated on every read and
// before every write, so the daemon never acts on (and pu never writes) a
// definition that does not parse. Unknown top-level keys are reported as warnings,
// never errors, so files written by newer versions still load.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { basename, dirname, extname, join, relative } from "node:path";
import { isMap, isScalar, parseDocument, Scalar, stringify } from "yaml";
import { z } from "zod";
import { PuError } from "./errors.js";
import { validateDefinitionName } from "./names.js";
import { DEFINITION_KIND_TABLE, definitionDirName, puDir, type DefinitionKind } from "./paths.js";
import { isNamedRecurrence, isScheduleTimestamp, isValidTimeZone, validateRecurrence } from "./recurrence.js";
import { parseTemplate, TemplateFrontmatterSchema } from "./template.js";

export type { DefinitionKind } from "./paths.js";
export { renderTemplate } from "./template.js";

export type DefinitionScope = "local" | "global";

export function definitionExtension(kind: DefinitionKind): ".md" | ".yaml" {
  return DEFINITION_KIND_TABLE[kind].ext;
}

// ---- schemas ----------------------------------------------------------------

/** YAML turns `3` and `true` into numbers and booleans; variable values are text. */
const VariablesSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));

export const TriggerGateSchema = z.object({
  run: z.string().min(1, "must not be empty"),
  expect_exit: z.number().int().default(0),
  timeout_seconds: z.number().positive().default(600),
});

export const TriggerActionSchema = z
  .object({
    inject: z.string().min(1, "must not be empty").optional(),
    gate: TriggerGateSchema.optional(),
    max_retries: z.number().int().min(0).default(0),
  })
  .refine((action) => action.inject !== undefined || action.gate !== undefined, {
    message: "an action needs `inject`, `gate` or both",
  });

export const TriggerEventSchema = z.enum(["agent_idle", "pre_commit", "pre_push"]);

export const TriggerDefinitionSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  on: TriggerEventSchema,
  sequence: z.array(TriggerActionSchema).min(1, "must have at least one action"),
  variables: VariablesSchema.optional(),
});

export const AgentDefinitionSchema = z
  .object({
    name: z.string(),
    description: z.string().optional(),
    agentType: z.string().min(1).default("claude"),
    template: z.string().min(1).optional(),
    inlinePrompt: z.string().min(1).optional(),
    tags: z.array(z.string().min(1)).optional(),
    command: z.string().min(1).optional(),
  })
  .refine((def) => def.template === undefined || def.inlinePrompt === undefined, {
    message: "set `template` or `inlinePrompt`, not both",
    path: ["inlinePrompt"],
  });

export const SwarmRosterEntrySchema = z.object({
  agentDef: z.string().min(1),
  role: z.string().min(1),
  quantity: z.number().int().min(1).default(1),
});

export const SwarmDefinitionSchema = z
  .object({
    name: z.string(),
    description: z.string().optional(),
    worktreeCount: z.number().int().min(1),
    worktreeTemplate: z.string().min(1).default("{name}-{index}"),
    roster: z.array(SwarmRosterEntrySchema).default([]),
    includeTerminal: z.boolean().optional(),
  })
  .refine((swarm) => swarm.worktreeCount === 1 || swarm.worktreeTemplate.includes("{index}"), {
    message: "must contain {index} so each worktree gets its own name",
    path: ["worktreeTemplate"],
  })
  .refine((swarm) => swarm.roster.length > 0 || swarm.includeTerminal === true, {
    message: "must list at least one agent (or set includeTerminal)",
    path: ["roster"],
  });

/** What a schedule starts: exactly one of an agent definition, a swarm or an inline prompt. */
export const ScheduleTargetSchema = z
  .object({
    agentDef: z.string().min(1).optional(),
    swarm: z.string().min(1).optional(),
    inlinePrompt: z.string().min(1).optional(),
    agent: z.string().min(1).optional(),
  })
  .superRefine((target, ctx) => {
    const set = (["agentDef", "swarm", "inlinePrompt"] as const).filter((key) => target[key] !== undefined);
    if (set.length !== 1) {
      ctx.addIssue({
        code: "custom",
        message: `needs exactly one of agentDef, swarm or inlinePrompt${set.length > 1 ? ` (got ${set.join(" and ")})` : ""}`,
      });
    }
    if (target.agent !== undefined && target.inlinePrompt === undefined) {
      ctx.addIssue({ code: "custom", path: ["agent"], message: "only applies to an inlinePrompt" });
    }
  });

const TimestampSchema = z.string().refine(isScheduleTimestamp, "must be an ISO 8601 date-time");

export const ScheduleDefinitionSchema = z
  .object({
    name: z.string(),
    description: z.string().optional(),
    enabled: z.boolean().default(true),
    recurrence: z.string().superRefine((value, ctx) => {
      if (isNamedRecurrence(value.trim())) return;
      try {
        validateRecurrence(value.trim());
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
      }
    }),
    startAt: TimestampSchema,
    timeZone: z
      .string()
      .refine(isValidTimeZone, "must be an IANA time zone such as Europe/Berlin")
      .optional(),
    nextRun: TimestampSchema.optional(),
    lastRun: TimestampSchema.optional(),
    trigger: ScheduleTargetSchema,
    root: z.boolean().optional(),
    worktree: z.string().min(1).optional(),
    vars: VariablesSchema.optional(),
  })
  .superRefine((schedule, ctx) => {
    if (schedule.root === true && schedule.worktree !== undefined) {
      ctx.addIssue({ code: "custom", path: ["worktree"], message: "set `root: true` or `worktree`, not both" });
    }
    if (schedule.trigger.swarm !== undefined && (schedule.root === true || schedule.worktree !== undefined)) {
      ctx.addIssue({ code: "custom", path: ["trigger"], message: "a swarm makes its own worktrees; drop `root`/`worktree`" });
    }
  });

export type TriggerGate = z.infer<typeof TriggerGateSchema>;
export type TriggerAction = z.infer<typeof TriggerActionSchema>;
export type TriggerEvent = z.infer<typeof TriggerEventSchema>;
export type TriggerDefinition = z.infer<typeof TriggerDefinitionSchema>;
export type AgentDefinition = z.infer<typeof AgentDefinitionSchema>;
export type SwarmRosterEntry = z.infer<typeof SwarmRosterEntrySchema>;
export type SwarmDefinition = z.infer<typeof SwarmDefinitionSchema>;
export type ScheduleTarget = z.infer<typeof ScheduleTargetSchema>;
export type ScheduleDefinition = z.infer<typeof ScheduleDefinitionSchema>;

export type TemplateDefinition = z.infer<typeof TemplateFrontmatterSchema> & {
  name: string;
  body: string;
  /** Placeholder names used in the body. */
  variables: string[];
};

export interface DefinitionByKind {
  template: TemplateDefinition;
  agent: AgentDefinition;
  swarm: SwarmDefinition;
  trigger: TriggerDefinition;
  schedule: ScheduleDefinition;
}

const YAML_SCHEMAS = {
  agent: AgentDefinitionSchema,
  swarm: SwarmDefinitionSchema,
  trigger: TriggerDefinitionSchema,
  schedule: ScheduleDefinitionSchema,
} as const;

/** The worktree names a swarm creates: `{name}` is the swarm's name, `{index}` counts from 1. */
export function swarmWorktreeNames(swarm: Pick<SwarmDefinition, "name" | "worktreeCount" | "worktreeTemplate">): string[] {
  return Array.from({ length: swarm.worktreeCount }, (_, i) =>
    swarm.worktreeTemplate.replaceAll("{name}", swarm.name).replaceAll("{index}", String(i + 1)),
  );
}

// ---- parsing ------------------------------------------------------------------

export interface ParsedDefinition<K extends DefinitionKind> {
  parsed: DefinitionByKind[K];
  /** Non-fatal findings, each naming the file (unknown keys). */
  warnings: string[];
}

/**
 * Validates one definition file's text. `path` names the file in messages and
 * supplies the default `name` (its base name without extension); a `name` field
 * that disagrees with the file name is an error. Throws CONFIG_ERROR
 * `<path>: <field path>: <problem>`.
 */
export function parseDefinition<K extends DefinitionKind>(kind: K, text: string, path: string): ParsedDefinition<K> {
  const fileName = basename(path, definitionExtension(kind));
  if (kind === "template") return parseTemplateDefinition(text, path, fileName) as ParsedDefinition<K>;

  const doc = parseDocument(text, { prettyErrors: false });
  const [yamlError] = doc.errors;
  if (yamlError) throw new PuError("CONFIG_ERROR", `${path}: not valid YAML: ${yamlError.message}`);
  const raw: unknown = doc.toJS();
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new PuError("CONFIG_ERROR", `${path}: must be a YAML mapping of fields`);
  }
  const fields = raw as Record<string, unknown>;
  checkName(fields.name, fileName, path);

  const schema = YAML_SCHEMAS[kind as Exclude<DefinitionKind, "template">];
  const result = schema.safeParse({ ...fields, name: fileName });
  if (!result.success) throw configError(path, result.error);

  const known = new Set(Object.keys(schema.shape));
  const warnings = Object.keys(fields)
    .filter((key) => !known.has(key))
    .map((key) => `${path}: unknown key "${key}" ignored`);
  return { parsed: result.data as DefinitionByKind[K], warnings };
}

/**
 * `text` (a YAML definition) with top-level fields set, or removed where the value is null.
 * Edits go through yaml's Document, so comments (even one on the edited line), key order,
 * quoting and blank lines stay as the user wrote them; a new key is appended, a string
 * double-quoted. `path` names the file in errors.
 */
export function setDefinitionFields(text: string, fields: Record<string, string | boolean | null>, path: string): string {
  const doc = parseDocument(text, { prettyErrors: false });
  const [yamlError] = doc.errors;
  if (yamlError) throw new PuError("CONFIG_ERROR", `${path}: not valid YAML: ${yamlError.message}`);
  if (!isMap(doc.contents)) throw new PuError("CONFIG_ERROR", `${path}: must be a YAML mapping of fields`);
  for (const [key, value] of Object.entries(fields)) {
    if (value === null) {
      doc.delete(key);
      continue;
    }
    const existing = doc.get(key, true);
    if (isScalar(existing)) {
      existing.value = value;
      continue;
    }
    const node = new Scalar(value);
    if (typeof value === "string") node.type = Scalar.QUOTE_DOUBLE;
    doc.set(key, node);
  }
  // lineWidth 0: never fold a long line the user wrote on one.
  return doc.toString({ lineWidth: 0 });
}

function parseTemplateDefinition(text: string, path: string, fileName: string): ParsedDefinition<"template"> {
  const { frontmatter, body, variables, warnings } = parseTemplate(text, path);
  checkName(frontmatter.name, fileName, path);
  return { parsed: { ...frontmatter, name: fileName, body, variables }, warnings };
}

function checkName(declared: unknown, fileName: string, path: string): void {
  try {
    validateDefinitionName(fileName);
  } catch (error) {
    throw new PuError("CONFIG_ERROR", `${path}: ${(error as Error).message}`, { cause: error });
  }
  if (declared === undefined || declared === null) return;
  if (declared !== fileName) {
    throw new PuError(
      "CONFIG_ERROR",
      `${path}: name: "${String(declared)}" does not match the file name "${fileName}" (rename one of them, or drop the field)`,
    );
  }
}

function configError(path: string, error: z.ZodError): PuError {
  const problems = error.issues.map((issue) => {
    const message =
      issue.code === "invalid_type" && issue.message.endsWith("received undefined") ? "is required" : issue.message;
    const field = fieldPath(issue.path);
    return field ? `${field}: ${message}` : message;
  });
  return new PuError("CONFIG_ERROR", `${path}: ${problems.join("; ")}`, { cause: error });
}

/** `["sequence", 0, "gate", "run"]` → `sequence[0].gate.run` */
function fieldPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === "number" ? `[${part}]` : `${i === 0 ? "" : "."}${String(part)}`))
    .join("");
}

/**
 * Text for a definition value, ready for `saveDefinition`: YAML for most kinds,
 * frontmatter + body for templates. Defaults are written out explicitly.
 */
export function stringifyDefinition<K extends DefinitionKind>(kind: K, value: DefinitionByKind[K]): string {
  if (kind === "template") {
    const { body, variables: _variables, ...frontmatter } = value as TemplateDefinition;
    const header = stringify(dropUndefined(frontmatter)).trimEnd();
    return `---\n${header}\n---\n${body}`;
  }
  return stringify(dropUndefined(value as object));
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

// ---- files --------------------------------------------------------------------

export interface DefinitionScopes {
  /** Project root (the directory holding `.pu/`); without it only global definitions exist. */
  projectRoot?: string | undefined;
  /** `$PU_HOME`. */
  home: string;
}

/** The directory holding the kind directories for a scope: `<root>/.pu` or `$PU_HOME`. */
export function scopeDir(scope: DefinitionScope, scopes: DefinitionScopes): string {
  if (scope === "global") return scopes.home;
  if (!scopes.projectRoot) {
    throw new PuError("NOT_INITIALIZED", "local definitions need a project (run inside one, or pass --project)");
  }
  return puDir(scopes.projectRoot);
}

/** `<scopeDir>/<kind dir>/<name>.<ext>`; `scopeDir` is `<root>/.pu` or `$PU_HOME`. */
export function definitionPath(kind: DefinitionKind, name: string, scopeDirectory: string): string {
  validateDefinitionName(name);
  return join(scopeDirectory, definitionDirName(kind), `${name}${definitionExtension(kind)}`);
}

/** How a path appears in messages: local files relative to the project root (`.pu/triggers/x.yaml`). */
function displayPath(path: string, scope: DefinitionScope, scopes: DefinitionScopes): string {
  return scope === "local" && scopes.projectRoot ? relative(scopes.projectRoot, path) : path;
}

function scopesInOrder(scopes: DefinitionScopes): DefinitionScope[] {
  return scopes.projectRoot ? ["local", "global"] : ["global"];
}

export interface DefinitionSummary {
  name: string;
  scope: DefinitionScope;
  path: string;
  description?: string;
  /** Set when the file does not parse; the entry is listed so it can be fixed or deleted. */
  error?: string;
  /** What parsing ignored, such as unknown keys (the definition is usable). */
  warnings?: string[];
}

/** Local definitions first, then global ones not hidden by a local file of the same name; each group by name. */
export async function listDefinitions(kind: DefinitionKind, scopes: DefinitionScopes): Promise<DefinitionSummary[]> {
  const summaries: DefinitionSummary[] = [];
  const seen = new Set<string>();
  for (const scope of scopesInOrder(scopes)) {
    const dir = join(scopeDir(scope, scopes), definitionDirName(kind));
    for (const name of await definitionNamesIn(dir, kind)) {
      if (seen.has(name)) continue;
      seen.add(name);
      const path = definitionPath(kind, name, dirname(dir));
      const summary: DefinitionSummary = { name, scope, path };
      try {
        const text = await fs.readFile(path, "utf8");
        const { parsed, warnings } = parseDefinition(kind, text, displayPath(path, scope, scopes));
        if (parsed.description !== undefined) summary.description = parsed.description;
        if (warnings.length > 0) summary.warnings = warnings;
      } catch (error) {
        summary.error = (error as Error).message;
      }
      summaries.push(summary);
    }
  }
  return summaries;
}

async function definitionNamesIn(dir: string, kind: DefinitionKind): Promise<string[]> {
  let entries: import("node:fs").Dirent[];
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (isMissing(error)) return [];
    throw ioError(`cannot read ${dir}`, error);
  }
  const ext = definitionExtension(kind);
  return entries
    .filter((entry) => (entry.isFile() || entry.isSymbolicLink()) && extname(entry.name) === ext)
    .map((entry) => basename(entry.name, ext))
    .filter(isValidName)
    .sort();
}

function isValidName(name: string): boolean {
  try {
    validateDefinitionName(name);
    return true;
  } catch {
    return false;
  }
}

export interface LoadedDefinition<K extends DefinitionKind> {
  name: string;
  scope: DefinitionScope;
  /** Absolute path of the file. */
  path: string;
  /** The file's text as stored. */
  content: string;
  parsed: DefinitionByKind[K];
  warnings: string[];
}

/**
 * The local definition if there is one, else the global one. NOT_FOUND when
 * neither exists; CONFIG_ERROR when the file found does not validate (a broken
 * local file is not silently replaced by a global one).
 */
export async function loadDefinition<K extends DefinitionKind>(
  kind: K,
  name: string,
  scopes: DefinitionScopes,
): Promise<LoadedDefinition<K>> {
  validateDefinitionName(name);
  const looked: string[] = [];
  for (const scope of scopesInOrder(scopes)) {
    const path = definitionPath(kind, name, scopeDir(scope, scopes));
    let content: string;
    try {
      content = await fs.readFile(path, "utf8");
    } catch (error) {
      if (isMissing(error)) {
        looked.push(path);
        continue;
      }
      throw ioError(`cannot read ${path}`, error);
    }
    const { parsed, warnings } = parseDefinition(kind, content, displayPath(path, scope, scopes));
    return { name, scope, path, content, parsed, warnings };
  }
  throw new PuError("NOT_FOUND", `no ${kind} named "${name}" (looked for ${looked.join(" and ")})`);
}

export interface SaveDefinitionOptions extends DefinitionScopes {
  scope: DefinitionScope;
  /** Replace an existing file of the same name in that scope; otherwise an existing file is an error. */
  overwrite?: boolean;
}

/**
 * Validates `content` and writes it atomically (temp file + fsync + rename) to
 * the scope's directory. Invalid content is never written. Without `overwrite`
 * an existing file is left untouched and INVALID_ARGUMENT is thrown — checked
 * atomically, so two concurrent creates cannot both win.
 */
export async function saveDefinition<K extends DefinitionKind>(
  kind: K,
  name: string,
  content: string,
  options: SaveDefinitionOptions,
): Promise<LoadedDefinition<K>> {
  validateDefinitionName(name);
  const path = definitionPath(kind, name, scopeDir(options.scope, options));
  const { parsed, warnings } = parseDefinition(kind, content, displayPath(path, options.scope, options));
  try {
    await fs.mkdir(dirname(path), { recursive: true });
  } catch (error) {
    throw ioError(`cannot create ${dirname(path)}`, error);
  }
  await writeAtomically(path, content, options.overwrite === true);
  return { name, scope: options.scope, path, content, parsed, warnings };
}

export interface DeleteDefinitionOptions extends DefinitionScopes {
  /** Which copy to delete; default the one `loadDefinition` would use (local first). */
  scope?: DefinitionScope;
}

/** Deletes one definition file; NOT_FOUND when there is none in the scope(s) asked. */
export async function deleteDefinition(
  kind: DefinitionKind,
  name: string,
  options: DeleteDefinitionOptions,
): Promise<{ name: string; scope: DefinitionScope; path: string }> {
  validateDefinitionName(name);
  const scopes = options.scope ? [options.scope] : scopesInOrder(options);
  const looked: string[] = [];
  for (const scope of scopes) {
    const path = definitionPath(kind, name, scopeDir(scope, options));
    try {
      await fs.unlink(path);
      return { name, scope, path };
    } catch (error) {
      if (!isMissing(error)) throw ioError(`cannot delete ${path}`, error);
      looked.push(path);
    }
  }
  throw new PuError("NOT_FOUND", `no ${kind} named "${name}" (looked for ${looked.join(" and ")})`);
}

async function writeAtomically(path: string, content: string, overwrite: boolean): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    const handle = await fs.open(temp, "wx", 0o644);
    try {
      await handle.writeFile(content, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (overwrite) {
      await fs.rename(temp, path);
    } else {
      // link() fails with EEXIST instead of replacing, which rename() would do silently.
      await fs.link(temp, path);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new PuError("INVALID_ARGUMENT", `${path} already exists (delete it first, or overwrite it explicitly)`);
    }
    throw ioError(`cannot write ${path}`, error);
  } finally {
    await fs.rm(temp, { force: true });
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

function ioError(what: string, error: unknown): PuError {
  return new PuError("IO_ERROR", `${what}: ${(error as Error).message}`, { cause: error });
}
