// Project configuration, `.pu/config.yaml`. A missing file means defaults; every
// problem in a present file is a CONFIG_ERROR naming the file and the field.
import { readFile, stat } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { z } from "zod";
import { agentTypeDescriptor, BUILTIN_AGENT_TYPE_NAMES } from "./agent-types.js";
import { PuError } from "./errors.js";
import { describeFirstIssue } from "./manifest.js";
import { configPath } from "./paths.js";
import { DEFAULT_IDLE_THRESHOLD_SECONDS } from "./status.js";

export const DEFAULT_OUTPUT_BUFFER_BYTES = 1024 * 1024;
/** Each agent's output ring is allocated whole, so its size is bounded both ways. */
export const MIN_OUTPUT_BUFFER_BYTES = 4096;
export const MAX_OUTPUT_BUFFER_BYTES = 256 * 1024 * 1024;

/**
 * How an agent type is launched.
 * - `interactive: true`: the prompt is typed into the PTY once the program is up.
 * - `interactive: false`: the prompt goes on the command line, after `promptFlag`
 *   when set, else as the last positional argument.
 * - `resumeArgs`: arguments (after `command`) that resume the previous session;
 *   the token `{sessionId}` is replaced by the agent's session id.
 */
export interface AgentTypeConfig {
  command: string;
  promptFlag?: string;
  interactive: boolean;
  launchArgs: string[];
  resumeArgs?: string[];
}

export { SESSION_ID_PLACEHOLDER } from "./agent-types.js";

/** The launch fields of every built-in type, from the agent-type table (agent-types.ts). */
export function builtinAgentTypes(env: NodeJS.ProcessEnv = process.env): Record<string, AgentTypeConfig> {
  const shell = env.SHELL && env.SHELL.trim() !== "" ? env.SHELL : "/bin/sh";
  const types: Record<string, AgentTypeConfig> = {};
  for (const name of BUILTIN_AGENT_TYPE_NAMES) {
    const d = agentTypeDescriptor(name);
    if (!d) continue;
    const type: AgentTypeConfig = {
      command: name === "terminal" ? shell : d.command,
      // A prompt given on the command line needs no typing, whatever the program is.
      interactive: d.promptDelivery === "typed",
      launchArgs: [],
    };
    if (d.promptFlag !== undefined) type.promptFlag = d.promptFlag;
    if (d.resumeArgs !== undefined) type.resumeArgs = [...d.resumeArgs];
    types[name] = type;
  }
  return types;
}

export const BUILTIN_AGENT_TYPES: Readonly<Record<string, AgentTypeConfig>> = builtinAgentTypes();

// Fields are optional here so a config can tweak a built-in (say, only its launchArgs);
// a custom type without a command is rejected after merging.
const AgentTypeEntrySchema = z.looseObject({
  command: z.string().min(1).optional(),
  promptFlag: z.string().min(1).optional(),
  interactive: z.boolean().optional(),
  launchArgs: z.array(z.string()).optional(),
  resumeArgs: z.array(z.string()).optional(),
});

/** `plan:` settings of plan sessions (docs/plans.md). Commands here run only once the project is trusted. */
const PlanConfigSchema = z.object({
  /** The agent type of each plan role; a role not named takes the project's defaultAgent. */
  agents: z.partialRecord(z.enum(["explorer", "planner", "worker", "verifier"]), z.string().min(1)).default({}),
  /** A shell command run in a worker's worktree when its task's turn ends; it must pass for the task to resolve. */
  taskGate: z.string().min(1).optional(),
  /** Shell commands run on the integration branch before the verifier looks. */
  verify: z.array(z.string().min(1)).default([]),
  /** How long one check, gate or verify command may run. */
  checkTimeoutSeconds: z.number().positive().default(600),
  /** Times a failed check, an invalid plan or a missing output is typed back before the role fails. */
  retries: z.number().int().min(0).max(20).default(2),
});
export type PlanConfig = z.infer<typeof PlanConfigSchema>;

/** USD per million tokens for one model; cache prices default to the input price. */
const ModelPriceSchema = z.object({
  input: z.number().min(0),
  output: z.number().min(0),
  cacheRead: z.number().min(0).optional(),
  cacheWrite: z.number().min(0).optional(),
});
export type ModelPrice = z.infer<typeof ModelPriceSchema>;

/** A spending limit: tokens (everything the provider reported) and/or US dollars. */
const BudgetLimitSchema = z.object({
  maxTokens: z.number().int().positive().optional(),
  maxCost: z.number().positive().optional(),
});
export type BudgetLimit = z.infer<typeof BudgetLimitSchema>;

const RawConfigSchema = z.looseObject({
  defaultAgent: z.string().min(1).default("claude"),
  envFiles: z.array(z.string()).default([]),
  agents: z.record(z.string().min(1), AgentTypeEntrySchema).default({}),
  idleThresholdSeconds: z.number().positive().default(DEFAULT_IDLE_THRESHOLD_SECONDS),
  outputBufferBytes: z
    .number()
    .int()
    .min(MIN_OUTPUT_BUFFER_BYTES, `must be between ${MIN_OUTPUT_BUFFER_BYTES} and ${MAX_OUTPUT_BUFFER_BYTES} bytes (4 KiB to 256 MiB)`)
    .max(MAX_OUTPUT_BUFFER_BYTES, `must be between ${MIN_OUTPUT_BUFFER_BYTES} and ${MAX_OUTPUT_BUFFER_BYTES} bytes (4 KiB to 256 MiB)`)
    .default(DEFAULT_OUTPUT_BUFFER_BYTES),
  defaultTrigger: z.string().min(1).optional(),
  plan: PlanConfigSchema.prefault({}),
  queue: z
    .object({
      maxParallel: z.number().int().min(1).optional(),
      maxPerProject: z.number().int().min(1).optional(),
      hungAfterMinutes: z.number().positive().optional(),
      /** Where this project's tickets run: `local` (this machine) and hosts' names (`pu host add`); default here only. */
      hosts: z.array(z.string().min(1)).min(1).max(32).optional(),
    })
    .optional(),
  /** Per-model price overrides (or prices for models the built-in table lacks). */
  prices: z.record(z.string().min(1), ModelPriceSchema).default({}),
  budgets: z.object({ daily: BudgetLimitSchema.optional() }).optional(),
});

const AgentTypeConfigSchema = z.object({
  command: z.string().min(1),
  promptFlag: z.string().min(1).optional(),
  interactive: z.boolean().default(true),
  launchArgs: z.array(z.string()).default([]),
  resumeArgs: z.array(z.string()).optional(),
});

export const ConfigSchema = z.object({
  defaultAgent: z.string().min(1),
  envFiles: z.array(z.string()),
  /** Built-in agent types merged with the configured ones (configured fields win). */
  agents: z.record(z.string(), AgentTypeConfigSchema),
  idleThresholdSeconds: z.number().positive(),
  outputBufferBytes: z.number().int().positive(),
  defaultTrigger: z.string().optional(),
  plan: PlanConfigSchema,
  queue: z.object({ maxParallel: z.number().optional(), maxPerProject: z.number().optional(), hungAfterMinutes: z.number().optional(), hosts: z.array(z.string()).optional() }).optional(),
  prices: z.record(z.string(), ModelPriceSchema),
  budgets: z.object({ daily: BudgetLimitSchema.optional() }).optional(),
});
export type Config = z.infer<typeof ConfigSchema>;

export const DEFAULT_CONFIG_YAML = `# pu project configuration. Every key is optional; shown are the defaults.

# Agent type used by \`pu spawn\` when no --agent is given:
# claude, codex, opencode, terminal, or a name defined under \`agents\`.
defaultAgent: claude

# Files copied from the project root into every new worktree (e.g. .env).
envFiles: []

# Seconds without meaningful output after which a live agent counts as waiting.
idleThresholdSeconds: ${DEFAULT_IDLE_THRESHOLD_SECONDS}

# Bytes of output kept per agent for \`pu logs\` and \`pu attach\`.
outputBufferBytes: ${DEFAULT_OUTPUT_BUFFER_BYTES}

# Trigger bound to new agents unless spawned with --no-trigger.
# defaultTrigger: review

# The work queue (pu ticket / pu queue): agents the daemon starts on its own.
# queue:
#   maxParallel: 3        # across projects (read from $PU_HOME/config.yaml); default cores - 1
#   maxPerProject: 2
#   hungAfterMinutes: 30  # a busy agent whose screen has not changed this long is reported
#   hosts: [local, gpu-box]  # where this project's tickets run (pu host add); default: here only

# Custom agent types, or tweaks to the built-in ones.
# agents:
#   aider:
#     command: aider
#     promptFlag: --message   # omit to pass the prompt as a positional argument
#     interactive: false      # true: the prompt is typed into the terminal instead
#     launchArgs: [--no-auto-commits]
#     resumeArgs: [--restore-chat-history]
#   claude:
#     launchArgs: [--model, opus]

# Prices in US dollars per million tokens, for models pu's built-in table lacks or to
# override it (cache prices default to the input price). \`pu usage\` shows the cost.
# prices:
#   my-local-model: { input: 0.5, output: 1.5, cacheRead: 0.05, cacheWrite: 0.6 }

# A daily budget for the whole project (UTC days): once spent, the queue pauses.
# budgets:
#   daily: { maxCost: 20, maxTokens: 50000000 }
`;

function configError(filePath: string, detail: string, cause?: unknown): PuError {
  return new PuError("CONFIG_ERROR", `config ${filePath}: ${detail}`, cause === undefined ? undefined : { cause });
}

/** Parses config text (YAML) into a Config with defaults and built-ins merged in. */
export function parseConfig(text: string, filePath: string, env: NodeJS.ProcessEnv = process.env): Config {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    if (error instanceof YAMLParseError) {
      const where = error.linePos?.[0] ? `line ${error.linePos[0].line}, column ${error.linePos[0].col}: ` : "";
      throw configError(filePath, `not valid YAML: ${where}${error.code}`, error);
    }
    throw configError(filePath, `not valid YAML: ${(error as Error).message}`, error);
  }
  if (raw === null || raw === undefined) raw = {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw configError(filePath, "expected a mapping of settings at the top level");
  }
  const parsed = RawConfigSchema.safeParse(raw);
  if (!parsed.success) throw configError(filePath, describeFirstIssue(parsed.error), parsed.error);
  const rawConfig = parsed.data;

  const agents: Record<string, AgentTypeConfig> = { ...builtinAgentTypes(env) };
  for (const [name, entry] of Object.entries(rawConfig.agents)) {
    const base = Object.hasOwn(agents, name) ? agents[name] : undefined;
    const defined = Object.fromEntries(Object.entries(entry).filter(([, value]) => value !== undefined));
    const merged = AgentTypeConfigSchema.safeParse({ ...base, ...defined });
    if (!merged.success) {
      const issue = merged.error.issues[0];
      const field = ["agents", name, ...(issue?.path.map(String) ?? [])].join(".");
      throw configError(filePath, `${field}: ${issue?.message ?? "invalid"}`, merged.error);
    }
    agents[name] = merged.data;
  }
  if (!Object.hasOwn(agents, rawConfig.defaultAgent)) {
    throw configError(
      filePath,
      `defaultAgent: unknown agent type '${rawConfig.defaultAgent}' (known: ${Object.keys(agents).join(", ")})`,
    );
  }
  const config: Config = {
    defaultAgent: rawConfig.defaultAgent,
    envFiles: rawConfig.envFiles,
    agents,
    idleThresholdSeconds: rawConfig.idleThresholdSeconds,
    outputBufferBytes: rawConfig.outputBufferBytes,
    plan: rawConfig.plan,
    prices: rawConfig.prices,
  };
  if (rawConfig.budgets !== undefined) config.budgets = rawConfig.budgets;
  if (rawConfig.defaultTrigger !== undefined) config.defaultTrigger = rawConfig.defaultTrigger;
  if (rawConfig.queue !== undefined) config.queue = rawConfig.queue;
  return config;
}

/** A config file emptied this recently may be one an editor has truncated and is about to write. */
const JUST_EMPTIED_MS = 2000;
/** How long such a file is read again, and how often, before its emptiness is believed. */
const EMPTIED_WAIT_MS = 500;
const EMPTIED_POLL_MS = 20;

/**
 * A config file's text. An editor that saves in place truncates the file, then writes it: a
 * read in between sees an empty file, which is a valid config of all defaults (no queue cap,
 * the built-in agent types). So an empty file changed in the last moments is read again for a
 * little while; one that stays empty, or was emptied earlier, is empty. ENOENT is the caller's.
 */
export async function readConfigText(file: string): Promise<string> {
  let text = await readFile(file, "utf8");
  const giveUpAt = Date.now() + EMPTIED_WAIT_MS;
  while (text === "" && Date.now() < giveUpAt && Date.now() - (await stat(file)).mtimeMs < JUST_EMPTIED_MS) {
    await sleep(EMPTIED_POLL_MS);
    text = await readFile(file, "utf8");
  }
  return text;
}

/** The project's config; a missing `.pu/config.yaml` gives the defaults. */
export async function loadConfig(root: string, env: NodeJS.ProcessEnv = process.env): Promise<Config> {
  const path = configPath(root);
  let text: string;
  try {
    text = await readConfigText(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return parseConfig("", path, env);
    throw new PuError("IO_ERROR", `cannot read ${path}: ${(error as Error).message}`, { cause: error });
  }
  return parseConfig(text, path, env);
}

export function defaultConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseConfig("", "(defaults)", env);
}

/**
 * Settings a project's `.pu/config.yaml` may hold but that only `$PU_HOME/config.yaml` decides
 * (the cap across projects cannot be one project's): one line each, naming both files.
 */
export function projectConfigWarnings(config: Config, projectFile: string, homeFile: string): string[] {
  if (config.queue?.maxParallel === undefined) return [];
  return [`${projectFile}: queue.maxParallel has no effect here; it is read from ${homeFile} only`];
}

/** The launch settings for agent type `name`; INVALID_ARGUMENT when there is no such type. */
export function resolveAgentType(config: Config, name: string): AgentTypeConfig {
  const found = Object.hasOwn(config.agents, name) ? config.agents[name] : undefined;
  if (!found) {
    throw new PuError(
      "INVALID_ARGUMENT",
      `unknown agent type '${name}' (known: ${Object.keys(config.agents).join(", ")})`,
    );
  }
  return found;
}
