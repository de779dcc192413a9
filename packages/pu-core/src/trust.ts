// What in a project's `.pu/` can run a command, and the record of what its person trusted.
// A cloned repository may carry `.pu/` files; none of what they would run takes effect
// until someone runs `pu trust` there. Each item is hashed on what it runs, so changing a
// gate command asks again while editing an inject text does not.
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { z } from "zod";
import { builtinAgentTypes, loadConfig, type AgentTypeConfig } from "./config.js";
import { listDefinitions, loadDefinition, type DefinitionScopes, type LoadedDefinition } from "./definitions.js";
import { isPuError, PuError } from "./errors.js";
import { parseJsonText } from "./json-state.js";
import { configPath, puDir } from "./paths.js";
import { parseWorkflow, type Workflow } from "./workflow.js";

/** One thing in a project that can run a command. */
export interface TrustItem {
  /** Stable identity within the project, e.g. `config.yaml agents.scripted`, `triggers/ci.yaml`. */
  key: string;
  /** The file it comes from (absolute). */
  file: string;
  /** What it would run, for a person to read (one line). */
  runs: string;
  /** sha256 of what it runs. */
  hash: string;
}

function item(key: string, file: string, runs: string, content: unknown): TrustItem {
  const hash = createHash("sha256").update(JSON.stringify([key, content])).digest("hex");
  return { key, file, runs: oneLine(runs), hash };
}

function oneLine(text: string): string {
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return flat.length > 160 ? `${flat.slice(0, 157)}...` : flat;
}

/**
 * A project agent type that differs from pu's built-in one of that name (or has none): the
 * project chose what it runs. Built-in types the project left alone need no trust.
 */
export function agentTypeTrustItem(
  projectRoot: string,
  name: string,
  type: AgentTypeConfig,
  env: NodeJS.ProcessEnv = process.env,
): TrustItem | undefined {
  const builtin = builtinAgentTypes(env)[name];
  const runs = { command: type.command, launchArgs: type.launchArgs, resumeArgs: type.resumeArgs ?? null };
  if (builtin && JSON.stringify(runs) === JSON.stringify({ command: builtin.command, launchArgs: builtin.launchArgs, resumeArgs: builtin.resumeArgs ?? null })) {
    return undefined;
  }
  return item(`config.yaml agents.${name}`, configPath(projectRoot), `agent type "${name}" runs ${[type.command, ...type.launchArgs].join(" ")}`, runs);
}

/** The plan session commands a project's config names (`plan.taskGate`, `plan.verify`). */
export function planCommandsTrustItem(projectRoot: string, plan: { taskGate?: string; verify: string[] }): TrustItem | undefined {
  const commands = [...(plan.taskGate ? [plan.taskGate] : []), ...plan.verify];
  if (commands.length === 0) return undefined;
  return item("config.yaml plan", configPath(projectRoot), `plan checks run ${commands.join(" ; ")}`, { taskGate: plan.taskGate ?? null, verify: plan.verify });
}

/** A local trigger's gate commands (undefined for a global trigger or one with no gate). */
export function triggerTrustItem(loaded: LoadedDefinition<"trigger">): TrustItem | undefined {
  if (loaded.scope !== "local") return undefined;
  const gates = loaded.parsed.sequence.flatMap((action) => (action.gate ? [action.gate.run] : []));
  if (gates.length === 0) return undefined;
  const runs = gates.map((g) => `"${g}"`).join(", ");
  return item(`triggers/${loaded.name}`, loaded.path, `trigger "${loaded.name}" runs gate${gates.length === 1 ? "" : "s"} ${runs}`, gates);
}

/** A project workflow's gate commands (undefined when no step has a gate). */
export function workflowTrustItem(projectRoot: string, file: string, workflow: Workflow): TrustItem | undefined {
  const gates = workflow.steps.flatMap((step) => (step.gate ? [step.gate.run] : []));
  if (gates.length === 0) return undefined;
  const key = relative(puDir(projectRoot), file);
  const runs = gates.map((g) => `"${g}"`).join(", ");
  return item(key, file, `workflow ${key} runs gate${gates.length === 1 ? "" : "s"} ${runs}`, gates);
}

/** `.pu/workflows/<TYPE>.yaml` and `.pu/workflows/<collection>/<TYPE>.yaml`. */
async function projectWorkflowFiles(projectRoot: string): Promise<string[]> {
  const dir = join(puDir(projectRoot), "workflows");
  const files: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (entry.isFile() && entry.name.endsWith(".yaml")) files.push(join(dir, entry.name));
    if (entry.isDirectory()) {
      const inner = await readdir(join(dir, entry.name), { withFileTypes: true }).catch(() => []);
      for (const e of inner) if (e.isFile() && e.name.endsWith(".yaml")) files.push(join(dir, entry.name, e.name));
    }
  }
  return files.sort();
}

/** A local agent definition or template whose `command` replaces the agent's program. */
export function definitionCommandTrustItem(loaded: LoadedDefinition<"agent"> | LoadedDefinition<"template">): TrustItem | undefined {
  if (loaded.scope !== "local") return undefined;
  const command = loaded.parsed.command;
  if (command === undefined) return undefined;
  const kind = "agentType" in loaded.parsed ? "agents" : "templates";
  const label = kind === "agents" ? "agent definition" : "template";
  return item(`${kind}/${loaded.name}`, loaded.path, `${label} "${loaded.name}" runs ${command}`, command);
}

/** The trust item of a loaded definition of a kind that can run a command (undefined when it runs none). */
export function definitionTrustItem(
  kind: "trigger" | "agent" | "template",
  loaded: LoadedDefinition<"trigger" | "agent" | "template">,
): TrustItem | undefined {
  return kind === "trigger"
    ? triggerTrustItem(loaded as LoadedDefinition<"trigger">)
    : definitionCommandTrustItem(loaded as LoadedDefinition<"agent"> | LoadedDefinition<"template">);
}

/** Every command-bearing item of a project's `.pu/` (what `pu trust` shows and records). */
export async function projectTrustItems(scopes: DefinitionScopes & { projectRoot: string }, env: NodeJS.ProcessEnv = process.env): Promise<TrustItem[]> {
  const root = scopes.projectRoot;
  const items: (TrustItem | undefined)[] = [];
  const config = await loadConfig(root, env);
  for (const [name, type] of Object.entries(config.agents)) items.push(agentTypeTrustItem(root, name, type, env));
  items.push(planCommandsTrustItem(root, config.plan));
  const localOnly = { projectRoot: root, home: scopes.home };
  for (const kind of ["trigger", "agent", "template"] as const) {
    for (const summary of await listDefinitions(kind, localOnly)) {
      if (summary.scope !== "local" || summary.error !== undefined) continue;
      const loaded = await loadDefinition(kind, summary.name, localOnly);
      if (loaded.scope !== "local") continue;
      items.push(definitionTrustItem(kind, loaded));
    }
  }
  for (const file of await projectWorkflowFiles(root)) {
    try {
      items.push(workflowTrustItem(root, file, parseWorkflow(await readFile(file, "utf8"), file).workflow));
    } catch {
      // An invalid workflow runs nothing; the queue reports it when a ticket needs it.
    }
  }
  return items.filter((i): i is TrustItem => i !== undefined);
}

// ---- the record in $PU_HOME/trust.json ------------------------------------------------

export const TrustFileSchema = z.object({
  version: z.literal(1),
  /** Project root → trusted item key → hash of what it runs. */
  projects: z.record(z.string(), z.object({ items: z.record(z.string(), z.string()) })),
});
export type TrustFile = z.infer<typeof TrustFileSchema>;

export function emptyTrustFile(): TrustFile {
  return { version: 1, projects: {} };
}

export function parseTrustFile(text: string, path: string): TrustFile {
  try {
    return parseJsonText(TrustFileSchema, text, path, "CONFIG_ERROR");
  } catch (error) {
    if (!isPuError(error)) throw error;
    throw new PuError(error.code, `${error.message}; fix or delete it, then run pu trust again`, { cause: error });
  }
}

export function isTrusted(file: TrustFile, projectRoot: string, candidate: TrustItem): boolean {
  return file.projects[projectRoot]?.items[candidate.key] === candidate.hash;
}

/** The items not trusted (new, or changed since they were trusted). */
export function untrustedItems(file: TrustFile, projectRoot: string, items: readonly (TrustItem | undefined)[]): TrustItem[] {
  return items.filter((i): i is TrustItem => i !== undefined && !isTrusted(file, projectRoot, i));
}

/** Records `items` as trusted (in place). */
export function trustItems(file: TrustFile, projectRoot: string, items: readonly TrustItem[]): void {
  const project = (file.projects[projectRoot] ??= { items: {} });
  for (const i of items) project.items[i.key] = i.hash;
}

/** The one line pu prints when it refuses to run something not trusted. */
export function untrustedError(projectRoot: string, untrusted: readonly TrustItem[]): PuError {
  const [first] = untrusted;
  const more = untrusted.length > 1 ? ` (and ${untrusted.length - 1} more)` : "";
  const changed = first ? `${first.runs} (from ${first.file})` : "project commands";
  return new PuError(
    "UNTRUSTED",
    `not trusted yet: ${changed}${more}; read it, then run \`pu trust\` in ${projectRoot} to allow it`,
  );
}
