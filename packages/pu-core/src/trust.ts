// What in a project's `.pu/` can make pu start a program, type into a terminal or add a flag,
// and the record of what its person trusted. A cloned repository may carry `.pu/` files
// (and tickets); none of what they would run or type takes effect until someone runs
// `pu trust` there. Each item is hashed on what it runs or types, so changing a gate
// command, a prompt or a ticket's body asks again while editing a description does not.
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { z } from "zod";
import { builtinAgentTypes, loadConfig, type AgentTypeConfig, type PlanConfig } from "./config.js";
import { listDefinitions, loadDefinition, type DefinitionScopes, type LoadedDefinition } from "./definitions.js";
import { isPuError, PuError } from "./errors.js";
import { parseJsonText } from "./json-state.js";
import { configPath, puDir } from "./paths.js";
import { parseTicket, ticketsDir, type Ticket, type TicketState } from "./ticket.js";
import { parseWorkflow, type Workflow } from "./workflow.js";

/** One thing in a project that can run a command, type into a terminal or add a flag. */
export interface TrustItem {
  /** Stable identity within the project, e.g. `config.yaml agents.scripted`, `triggers/ci`, `tickets/TASK-0001`. */
  key: string;
  /** The file it comes from (absolute). */
  file: string;
  /** What it would run or type, for a person to read (one line). */
  runs: string;
  /** sha256 of what it runs or types. */
  hash: string;
}

function item(key: string, file: string, runs: string, content: unknown): TrustItem {
  const hash = createHash("sha256").update(JSON.stringify([key, content], sortedKeys)).digest("hex");
  return { key, file, runs: oneLine(runs), hash };
}

/** JSON with every object's keys in order, so equal content hashes equal however it was read. */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function oneLine(text: string): string {
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return flat.length > 200 ? `${flat.slice(0, 197)}...` : flat;
}

/** A quoted excerpt of text pu would type: its first non-empty line, shortened. */
function excerpt(text: string): string {
  const first = text.split("\n").map((l) => l.trim()).find((l) => l !== "") ?? "";
  const more = text.trim().includes("\n") ? " …" : "";
  return `"${first.length > 60 ? `${first.slice(0, 57)}...` : first}${more}"`;
}

/** What an agent type runs: the program, its arguments, and how the prompt reaches it. */
function agentTypeRuns(type: AgentTypeConfig): unknown {
  return { command: type.command, launchArgs: type.launchArgs, resumeArgs: type.resumeArgs ?? null, promptFlag: type.promptFlag ?? null, interactive: type.interactive };
}

/**
 * A project agent type that differs from pu's built-in one of that name (or has none): the
 * project chose what it runs, its flags or where the prompt goes. Built-in types the
 * project left alone need no trust.
 */
export function agentTypeTrustItem(
  projectRoot: string,
  name: string,
  type: AgentTypeConfig,
  env: NodeJS.ProcessEnv = process.env,
): TrustItem | undefined {
  const builtin = builtinAgentTypes(env)[name];
  const runs = agentTypeRuns(type);
  if (builtin && JSON.stringify(runs) === JSON.stringify(agentTypeRuns(builtin))) return undefined;
  const flag = type.promptFlag !== undefined ? ` (prompt after ${type.promptFlag})` : "";
  return item(`config.yaml agents.${name}`, configPath(projectRoot), `agent type "${name}" runs ${[type.command, ...type.launchArgs].join(" ")}${flag}`, runs);
}

/**
 * The plan settings of a project's config that decide what runs: `plan.taskGate`,
 * `plan.verify` (commands) and `plan.agents` (which program each role's prompt is typed into).
 */
export function planSettingsTrustItem(projectRoot: string, plan: Pick<PlanConfig, "agents" | "verify"> & { taskGate?: string | undefined }): TrustItem | undefined {
  const commands = [...(plan.taskGate ? [plan.taskGate] : []), ...plan.verify];
  const roles = Object.entries(plan.agents).sort(([a], [b]) => a.localeCompare(b));
  if (commands.length === 0 && roles.length === 0) return undefined;
  const parts = [
    ...(commands.length > 0 ? [`plan checks run ${commands.join(" ; ")}`] : []),
    ...(roles.length > 0 ? [`plan roles run as ${roles.map(([role, agent]) => `${role}: ${agent}`).join(", ")}`] : []),
  ];
  return item("config.yaml plan", configPath(projectRoot), parts.join("; "), { taskGate: plan.taskGate ?? null, verify: plan.verify, agents: Object.fromEntries(roles) });
}

/** A local trigger: the gates it runs and the text it types (undefined for a global trigger). */
export function triggerTrustItem(loaded: LoadedDefinition<"trigger">): TrustItem | undefined {
  if (loaded.scope !== "local") return undefined;
  const { sequence, variables } = loaded.parsed;
  const gates = sequence.flatMap((action) => (action.gate ? [action.gate.run] : []));
  const injects = sequence.flatMap((action) => (action.inject !== undefined ? [action.inject] : []));
  const parts = [
    ...(gates.length > 0 ? [`runs gate${gates.length === 1 ? "" : "s"} ${gates.map((g) => `"${g}"`).join(", ")}`] : []),
    ...(injects.length > 0 ? [`types ${injects.map(excerpt).join(", ")}`] : []),
  ];
  const runs = sequence.map((action) => ({ inject: action.inject ?? null, gate: action.gate?.run ?? null }));
  return item(`triggers/${loaded.name}`, loaded.path, `trigger "${loaded.name}" ${parts.join("; ")}`, { runs, variables: variables ?? null });
}

/**
 * A project workflow: every step's prompt, agent, model and gate, its launch mode and its
 * group settings (everything but the description decides what runs or is typed).
 */
export function workflowTrustItem(projectRoot: string, file: string, workflow: Workflow): TrustItem {
  const { description: _description, ...runs } = workflow;
  const key = relative(puDir(projectRoot), file);
  const gates = workflow.steps.flatMap((step) => (step.gate ? [step.gate.run] : []));
  const agents = [...new Set(workflow.steps.flatMap((step) => [...(step.agent ? [step.agent] : []), ...(step.agents ?? []), ...(step.judge ? [step.judge] : [])]))];
  const parts = [
    ...(gates.length > 0 ? [`runs gate${gates.length === 1 ? "" : "s"} ${gates.map((g) => `"${g}"`).join(", ")}`] : []),
    ...(workflow.launch_mode === "yolo" ? ["launches its agents with launch_mode yolo (no permission prompts)"] : []),
    ...(agents.length > 0 ? [`starts ${agents.join(", ")}`] : []),
    `types ${workflow.steps.map((step) => `${step.name}: ${excerpt(step.prompt)}`).join(", ")}`,
  ];
  return item(key, file, `workflow ${key} ${parts.join("; ")}`, runs);
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

/** A template as the plan roles and spawns load it: where it is from, and what it holds. */
export type TemplateSource = Pick<LoadedDefinition<"template">, "name" | "scope" | "path" | "parsed">;

/** A local template: the text it types, the agent it picks and the command that replaces the agent's program. */
export function templateTrustItem(loaded: TemplateSource): TrustItem | undefined {
  if (loaded.scope !== "local") return undefined;
  const { body, agent, command } = loaded.parsed;
  const parts = [
    ...(command !== undefined ? [`runs ${command}`] : []),
    ...(agent !== undefined ? [`starts ${agent}`] : []),
    ...(body.trim() !== "" ? [`types ${excerpt(body)}`] : []),
  ];
  return item(`templates/${loaded.name}`, loaded.path, `template "${loaded.name}" ${parts.join("; ") || "is empty"}`, { body, agent: agent ?? null, command: command ?? null });
}

/** A local agent definition: the agent type it starts, its command, and its prompt (inline or a template's name). */
export function agentDefinitionTrustItem(loaded: LoadedDefinition<"agent">): TrustItem | undefined {
  if (loaded.scope !== "local") return undefined;
  const { agentType, command, template, inlinePrompt } = loaded.parsed;
  const parts = [
    command !== undefined ? `runs ${command}` : `starts ${agentType}`,
    ...(inlinePrompt !== undefined ? [`types ${excerpt(inlinePrompt)}`] : []),
    ...(template !== undefined ? [`types template "${template}"`] : []),
  ];
  return item(`agents/${loaded.name}`, loaded.path, `agent definition "${loaded.name}" ${parts.join("; ")}`, {
    agentType,
    command: command ?? null,
    template: template ?? null,
    inlinePrompt: inlinePrompt ?? null,
  });
}

/** A local schedule: what it starts and types, on its own, when it falls due (not when: its timing runs nothing new). */
export function scheduleTrustItem(loaded: Pick<LoadedDefinition<"schedule">, "name" | "scope" | "path" | "parsed">): TrustItem | undefined {
  if (loaded.scope !== "local") return undefined;
  const { trigger, vars, root, worktree, recurrence } = loaded.parsed;
  const what =
    trigger.agentDef !== undefined
      ? `starts agent definition "${trigger.agentDef}"`
      : trigger.swarm !== undefined
        ? `starts swarm "${trigger.swarm}"`
        : `starts ${trigger.agent ?? "the default agent"} and types ${excerpt(trigger.inlinePrompt ?? "")}`;
  return item(`schedules/${loaded.name}`, loaded.path, `schedule "${loaded.name}" (${recurrence}) ${what}`, {
    trigger,
    vars: vars ?? null,
    root: root ?? null,
    worktree: worktree ?? null,
  });
}

/** Fields pu itself adds to a ticket as it works it; they run nothing. */
const TICKET_BOOKKEEPING = new Set(["history", "output_tickets"]);

/**
 * A queue ticket: everything its workflow types or starts comes from it (title, body, vars,
 * agent, model, launch mode). pu trusts the tickets it writes for its person (`pu ticket
 * create`); one dropped into `queue/` by anyone else, or edited by hand since, waits for
 * `pu trust`. The key is the id, so moving between folders keeps the item.
 */
export function ticketTrustKey(ticketId: string): string {
  return `tickets/${ticketId}`;
}

export function ticketTrustItem(projectRoot: string, ticket: Ticket, file?: string): TrustItem {
  const runs = Object.fromEntries(Object.entries(ticket).filter(([k]) => !TICKET_BOOKKEEPING.has(k)));
  const extras = [...(ticket.agent !== undefined ? [`agent ${ticket.agent}`] : []), ...(ticket.model !== undefined ? [`model ${ticket.model}`] : [])];
  return item(
    ticketTrustKey(ticket.id),
    file ?? join(ticketsDir(projectRoot, "queue"), `${ticket.id}.md`),
    `ticket ${ticket.id} (${[ticket.type, ...extras].join(", ")}) types ${excerpt(ticket.title)} and ${excerpt(ticket.description)}`,
    runs,
  );
}

type TrustedKind = "trigger" | "agent" | "template" | "schedule";

/** The trust item of a loaded definition of a kind that runs or types something (undefined for a global one). */
export function definitionTrustItem(kind: TrustedKind, loaded: LoadedDefinition<TrustedKind>): TrustItem | undefined {
  switch (kind) {
    case "trigger":
      return triggerTrustItem(loaded as LoadedDefinition<"trigger">);
    case "agent":
      return agentDefinitionTrustItem(loaded as LoadedDefinition<"agent">);
    case "template":
      return templateTrustItem(loaded as LoadedDefinition<"template">);
    case "schedule":
      return scheduleTrustItem(loaded as LoadedDefinition<"schedule">);
  }
}

/** True for the definition kinds whose local files are trust items. */
export function isTrustedKind(kind: string): kind is TrustedKind {
  return kind === "trigger" || kind === "agent" || kind === "template" || kind === "schedule";
}

/** Tickets waiting in `queue/` or being worked in `in-progress/` (unreadable files run nothing and are skipped). */
async function projectTicketItems(projectRoot: string): Promise<TrustItem[]> {
  const items: TrustItem[] = [];
  for (const state of ["queue", "in-progress"] as const satisfies readonly TicketState[]) {
    const dir = ticketsDir(projectRoot, state);
    const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith(".md")).sort();
    for (const name of names) {
      const file = join(dir, name);
      try {
        const ticket = parseTicket(await readFile(file, "utf8"), file);
        if (`${ticket.id}.md` === name) items.push(ticketTrustItem(projectRoot, ticket, file));
      } catch {
        // Unreadable or misnamed: the queue reports it and never starts it.
      }
    }
  }
  return items;
}

/** Every item of a project that runs or types something (what `pu trust` shows and records). */
export async function projectTrustItems(scopes: DefinitionScopes & { projectRoot: string }, env: NodeJS.ProcessEnv = process.env): Promise<TrustItem[]> {
  const root = scopes.projectRoot;
  const items: (TrustItem | undefined)[] = [];
  const config = await loadConfig(root, env);
  for (const [name, type] of Object.entries(config.agents)) items.push(agentTypeTrustItem(root, name, type, env));
  items.push(planSettingsTrustItem(root, config.plan));
  const localOnly = { projectRoot: root, home: scopes.home };
  for (const kind of ["trigger", "agent", "template", "schedule"] as const) {
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
  items.push(...(await projectTicketItems(root)));
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

/** Drops items that no longer exist (a finished ticket), in place. */
export function forgetItems(file: TrustFile, projectRoot: string, keys: readonly string[]): void {
  const project = file.projects[projectRoot];
  if (!project) return;
  for (const key of keys) delete project.items[key];
}

/** What `pu queue` and `pu ticket list` say of a ticket that waits for `pu trust`. */
export function untrustedTicketMessage(ticketId: string): string {
  return `${ticketId}: untrusted: run \`pu trust\` (it was not created through pu here, or was edited since); it waits in queue/ until then`;
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
