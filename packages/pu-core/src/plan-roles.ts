// The four roles of a plan session and their contract with pu: a prompt template
// (shipped in `packages/pu-core/templates/plan-<role>.md`, overridable by a
// template of the same name in `.pu/templates/` or `$PU_HOME/templates/`), the
// environment the role agent gets, and the file it writes. The contract is files
// and environment only, so a script or a person's own tool can play any role.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  loadDefinition,
  parseDefinition,
  type DefinitionScope,
  type DefinitionScopes,
  type TemplateDefinition,
} from "./definitions.js";
import { isPuError, PuError } from "./errors.js";
import { validateExplorerId, validateTaskId, type PlanLayout } from "./plan-layout.js";

export const PLAN_ROLES = ["explorer", "planner", "worker", "verifier"] as const;
export type PlanRole = (typeof PLAN_ROLES)[number];

export function isPlanRole(value: string): value is PlanRole {
  return (PLAN_ROLES as readonly string[]).includes(value);
}

/** `plan-explorer`, `plan-planner`, `plan-worker`, `plan-verifier`. */
export function planTemplateName(role: PlanRole): string {
  return `plan-${role}`;
}

/**
 * The `{{VAR}}`s each shipped template uses; the daemon supplies all of them
 * (`FEEDBACK` is "" on a first turn: it carries what pu types back after a rejected
 * attempt). An overriding template may use any subset.
 */
export const PLAN_TEMPLATE_VARIABLES = {
  explorer: ["GOAL", "EXPLORER_ID", "HINT", "OUTPUT_FILE", "PLAN_DIR"],
  planner: ["GOAL", "PLAN_DIR", "OUTPUT_FILE", "FEEDBACK"],
  worker: ["GOAL", "TASK_ID", "TASK_SUBJECT", "TASK_DESCRIPTION", "TASK_CRITERIA", "PLAN_DIR", "OUTPUT_FILE", "FEEDBACK"],
  verifier: ["ITERATION", "GOAL", "PLAN_DIR", "OUTPUT_FILE", "FEEDBACK"],
} as const satisfies Record<PlanRole, readonly string[]>;

const builtinCache = new Map<PlanRole, TemplateDefinition>();

/** The directory of the shipped templates (beside `src/` and `dist/`, so both find it). */
export function builtinPlanTemplatesDir(): string {
  return fileURLToPath(new URL("../templates/", import.meta.url));
}

/** The template pu ships for `role`. Throws INTERNAL if the installation lost it. */
export function builtinPlanTemplate(role: PlanRole): TemplateDefinition {
  const cached = builtinCache.get(role);
  if (cached) return cached;
  const path = `${builtinPlanTemplatesDir()}${planTemplateName(role)}.md`;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new PuError("INTERNAL", `pu's built-in template ${path} is missing (reinstall pu): ${(error as Error).message}`, {
      cause: error,
    });
  }
  const { parsed } = parseDefinition("template", text, path);
  builtinCache.set(role, parsed);
  return parsed;
}

export interface PlanTemplate {
  template: TemplateDefinition;
  /** Where it came from: a project or home override, or pu's own. */
  source: DefinitionScope | "builtin";
  path: string;
  warnings: string[];
}

/**
 * `plan-<role>` from `.pu/templates/`, else `$PU_HOME/templates/`, else the shipped
 * one. A broken override is an error (CONFIG_ERROR), never silently replaced.
 */
export async function loadPlanTemplate(role: PlanRole, scopes: DefinitionScopes): Promise<PlanTemplate> {
  const name = planTemplateName(role);
  try {
    const loaded = await loadDefinition("template", name, scopes);
    return { template: loaded.parsed, source: loaded.scope, path: loaded.path, warnings: loaded.warnings };
  } catch (error) {
    if (!isPuError(error) || error.code !== "NOT_FOUND") throw error;
  }
  return {
    template: builtinPlanTemplate(role),
    source: "builtin",
    path: `${builtinPlanTemplatesDir()}${name}.md`,
    warnings: [],
  };
}

export type PlanRoleAssignment =
  | { role: "explorer"; explorerId: string }
  | { role: "planner" }
  | { role: "worker"; taskId: string }
  | { role: "verifier"; iteration: number };

/** The file a role agent writes (`PU_OUTPUT_FILE`). */
export function roleOutputFile(layout: PlanLayout, assignment: PlanRoleAssignment): string {
  switch (assignment.role) {
    case "explorer":
      return layout.exploration(assignment.explorerId);
    case "planner":
      return layout.design;
    case "worker":
      return layout.report(assignment.taskId);
    case "verifier":
      return layout.verdict(assignment.iteration);
  }
}

/**
 * The environment a role agent gets on top of pu's usual (`PU_AGENT_ID`,
 * `PU_PROJECT_ROOT`): `PU_PLAN_DIR`, `PU_PLAN_ROLE`, `PU_OUTPUT_FILE`, and
 * `PU_EXPLORER_ID` for explorers or `PU_TASK_ID` for workers.
 */
export function planRoleEnvironment(layout: PlanLayout, assignment: PlanRoleAssignment): Record<string, string> {
  const env: Record<string, string> = {
    PU_PLAN_DIR: layout.dir,
    PU_PLAN_ROLE: assignment.role,
    PU_OUTPUT_FILE: roleOutputFile(layout, assignment),
  };
  if (assignment.role === "explorer") env.PU_EXPLORER_ID = validateExplorerId(assignment.explorerId);
  if (assignment.role === "worker") env.PU_TASK_ID = validateTaskId(assignment.taskId);
  return env;
}
