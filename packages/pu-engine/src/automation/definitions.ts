// What the daemon does with definition files: turning templates, agent definitions and
// triggers into spawn fields and manifest bindings. Loading itself (local wins over
// global, validation) is @pu/core/definitions'.
import type { Config } from "@pu/core/config";
import {
  loadDefinition,
  renderTemplate,
  type DefinitionScopes,
  type LoadedDefinition,
  type TriggerDefinition,
} from "@pu/core/definitions";
import { PuError } from "@pu/core/errors";
import type { AgentEntry } from "@pu/core/manifest";
import { agentDefinitionTrustItem, templateTrustItem, triggerTrustItem } from "@pu/core/trust";
import type { RequestOf } from "@pu/ipc/protocol";
import type { EngineState } from "../state.js";

/** What a spawn asks for, without the request envelope: swarms, schedules and handlers all start agents from this. */
export type SpawnFields = Omit<RequestOf<"spawn">, "type" | "id" | "projectRoot">;

export function definitionScopes(state: EngineState, projectRoot?: string): DefinitionScopes {
  return { projectRoot, home: state.home };
}

/** A trigger an agent can be bound to (`on: agent_idle`); NOT_FOUND names the dirs searched. */
export async function loadAgentTrigger(state: EngineState, root: string, name: string): Promise<LoadedDefinition<"trigger">> {
  const loaded = await loadDefinition("trigger", name, definitionScopes(state, root));
  await state.trust.require(root, [triggerTrustItem(loaded)]);
  if (loaded.parsed.on !== "agent_idle") {
    throw new PuError(
      "INVALID_ARGUMENT",
      `trigger "${name}" runs on ${loaded.parsed.on} (a git hook), not when an agent waits; only agent_idle triggers can be bound to an agent`,
    );
  }
  return loaded;
}

/** The manifest fields that bind a trigger to an agent at the start of its sequence. */
export function triggerBinding(trigger: TriggerDefinition, vars: Record<string, string> | undefined): Partial<AgentEntry> {
  const fields: Partial<AgentEntry> = {
    triggerName: trigger.name,
    triggerSeqIndex: 0,
    triggerState: "active",
    triggerTotal: trigger.sequence.length,
    gateAttempts: 0,
  };
  if (vars && Object.keys(vars).length > 0) fields.triggerVars = { ...vars };
  return fields;
}

/** Writes a binding onto an entry (replacing any earlier one). */
export function bindTrigger(agent: AgentEntry, binding: Partial<AgentEntry>): void {
  delete agent.triggerVars;
  delete agent.noTrigger;
  delete agent.error;
  Object.assign(agent, binding);
}

/** The vars an agent was bound with, or none. */
export function triggerVarsOf(agent: AgentEntry): Record<string, string> {
  return agent.triggerVars ?? {};
}

/**
 * The trigger a spawn binds: `--trigger NAME`, else the project's `defaultTrigger`
 * unless `--no-trigger`. Resolved before anything is created, so a missing trigger
 * leaves nothing behind.
 */
export async function spawnTriggerBinding(
  state: EngineState,
  root: string,
  req: Pick<RequestOf<"spawn">, "trigger" | "noTrigger" | "vars">,
  config: Pick<Config, "defaultTrigger">,
): Promise<Partial<AgentEntry> | undefined> {
  if (req.trigger !== undefined && req.noTrigger) {
    throw new PuError("INVALID_ARGUMENT", "--trigger and --no-trigger cannot be combined");
  }
  if (req.noTrigger) return undefined;
  const name = req.trigger ?? config.defaultTrigger;
  if (name === undefined) return undefined;
  try {
    const loaded = await loadAgentTrigger(state, root, name);
    return triggerBinding(loaded.parsed, req.vars);
  } catch (err) {
    if (req.trigger === undefined && err instanceof PuError) {
      throw new PuError(err.code, `${err.message} (it is the project's defaultTrigger; fix .pu/config.yaml or spawn with --no-trigger)`, {
        cause: err,
      });
    }
    throw err;
  }
}

/**
 * Applies `template` (+ `vars`) to a spawn request: the rendered text becomes the
 * prompt; frontmatter `agent`/`command` fill in what the request left unset.
 * Missing vars are warnings (the text keeps `{{VAR}}`).
 */
export async function applySpawnTemplate(
  state: EngineState,
  root: string,
  req: SpawnFields,
): Promise<{ req: SpawnFields; warnings: string[] }> {
  if (req.template === undefined) return { req, warnings: [] };
  if (req.prompt !== undefined) {
    throw new PuError("INVALID_ARGUMENT", "give a prompt or a template, not both");
  }
  const loaded = await loadDefinition("template", req.template, definitionScopes(state, root));
  // A project's template is typed into the agent (and may pick its program): only once trusted.
  await state.trust.require(root, [templateTrustItem(loaded)]);
  const rendered = renderTemplate(loaded.parsed.body, req.vars ?? {});
  const warnings = [...loaded.warnings];
  if (rendered.missing.length > 0) {
    warnings.push(
      `template "${req.template}": no value for ${rendered.missing.map((v) => `{{${v}}}`).join(", ")} (left as written; pass --var NAME=VALUE)`,
    );
  }
  const next: SpawnFields = { ...req, prompt: rendered.text.trim() === "" ? undefined : rendered.text };
  if (next.agent === undefined && loaded.parsed.agent !== undefined) next.agent = loaded.parsed.agent;
  if (next.command === undefined && loaded.parsed.command !== undefined) next.command = loaded.parsed.command;
  return { req: next, warnings };
}

/** Spawn fields for an agent definition (`agents/<name>.yaml`): type, command, and its template or inline prompt. */
export async function agentDefinitionSpawnFields(
  state: EngineState,
  root: string,
  name: string,
  vars: Record<string, string> | undefined,
): Promise<Pick<RequestOf<"spawn">, "agent" | "command" | "template" | "prompt" | "vars">> {
  const loaded = await loadDefinition("agent", name, definitionScopes(state, root));
  const def = loaded.parsed;
  await state.trust.require(root, [agentDefinitionTrustItem(loaded)]);
  const fields: Pick<RequestOf<"spawn">, "agent" | "command" | "template" | "prompt" | "vars"> = { agent: def.agentType };
  if (def.command !== undefined) fields.command = def.command;
  if (def.template !== undefined) fields.template = def.template;
  if (def.inlinePrompt !== undefined) fields.prompt = renderTemplate(def.inlinePrompt, vars ?? {}).text;
  if (vars !== undefined) fields.vars = vars;
  return fields;
}
