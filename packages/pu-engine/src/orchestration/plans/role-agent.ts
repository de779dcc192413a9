/**
 * One role agent of a plan session: started through the one launch path with the role's
 * environment, then driven turn by turn. The contract with the agent is files and
 * environment only, so a script or a person's own tool can play any role.
 */
import { loadConfig } from "@pu/core/config";
import { PLAN_ROLES, planRoleEnvironment, planTemplateName, loadPlanTemplate, type PlanRole, type PlanRoleAssignment, type PlanTemplate } from "@pu/core/plan-roles";
import type { PlanLayout } from "@pu/core/plan-layout";
import type { Task } from "@pu/core/plan-files";
import { renderTemplate } from "@pu/core/template";
import { planSettingsTrustItem, templateTrustItem, type TrustItem } from "@pu/core/trust";
import { firstTurnOf, launchAgent, type LaunchedAgent, type LaunchPlacement } from "../../agents/launcher.js";
import { stopAgents, stopFinishedAgents } from "../../agents/stop.js";
import { turn, type TurnResult } from "../../agents/turn.js";
import { definitionScopes } from "../../automation/definitions.js";
import { pathWithPuCli } from "../../pu-cli-path.js";
import type { EngineState } from "../../state.js";

const STOP_GRACE_MS = 3000;

/** Agent names say which session and role an agent plays, so a restarted daemon can tell. */
export function roleAgentName(sessionId: string, assignment: PlanRoleAssignment): string {
  switch (assignment.role) {
    case "explorer":
      return `plan-${sessionId}-explorer-${assignment.explorerId}`;
    case "planner":
      return `plan-${sessionId}-planner`;
    case "worker":
      return `plan-${sessionId}-${assignment.taskId}`;
    case "verifier":
      return `plan-${sessionId}-verifier-${assignment.iteration}`;
  }
}

function planTemplateTrustItem(role: PlanRole, template: PlanTemplate): TrustItem | undefined {
  if (template.source !== "local") return undefined;
  return templateTrustItem({ name: planTemplateName(role), scope: "local", path: template.path, parsed: template.template });
}

/** The project's own role templates (`.pu/templates/plan-<role>.md`): typed into role agents, so trust items. */
export async function planTemplateTrustItems(state: EngineState, root: string): Promise<(TrustItem | undefined)[]> {
  const scopes = definitionScopes(state, root);
  return Promise.all(PLAN_ROLES.map(async (role) => planTemplateTrustItem(role, await loadPlanTemplate(role, scopes))));
}

/** The role's prompt from its template (`plan-<role>`, overridable in `.pu/templates/`; a project's own only once trusted). */
export async function rolePrompt(state: EngineState, root: string, role: PlanRole, vars: Record<string, string>): Promise<string> {
  const template = await loadPlanTemplate(role, definitionScopes(state, root));
  // Checked on every use: the file may have changed since the session started.
  await state.trust.require(root, [planTemplateTrustItem(role, template)]);
  return renderTemplate(template.template.body, vars).text.trim();
}

/** The worker template's prompt for one task: the plan's goal, the task, where its note goes, and what pu adds. */
export function workerPrompt(state: EngineState, root: string, layout: PlanLayout, work: { goal: string; task: Task; outputFile: string; feedback: string }): Promise<string> {
  const { task } = work;
  return rolePrompt(state, root, "worker", {
    GOAL: work.goal,
    TASK_ID: task.id,
    TASK_SUBJECT: task.subject,
    TASK_DESCRIPTION: task.description,
    TASK_CRITERIA: task.criteria.map((c) => `- ${c}`).join("\n"),
    PLAN_DIR: layout.dir,
    OUTPUT_FILE: work.outputFile,
    FEEDBACK: work.feedback,
  });
}

export interface RoleAgent {
  launched: LaunchedAgent;
  /** The end of the first turn (the prompt given at start). */
  firstTurn: Promise<TurnResult>;
}

/** Starts a role agent with its prompt; `placement` is the project root or a worktree. */
export async function startRoleAgent(
  state: EngineState,
  root: string,
  layout: PlanLayout,
  assignment: PlanRoleAssignment,
  prompt: string,
  placement: LaunchPlacement,
): Promise<RoleAgent> {
  const config = await loadConfig(root);
  await state.trust.require(root, [planSettingsTrustItem(root, config.plan)]);
  const agentType = config.plan.agents[assignment.role] ?? config.defaultAgent;
  const launched = await launchAgent(state, {
    projectRoot: root,
    agentType,
    prompt,
    placement,
    name: roleAgentName(layout.sessionId, assignment),
    // `pu` is on a role agent's PATH (workers ask for checks with `pu plan check`).
    env: { ...planRoleEnvironment(layout, assignment), PATH: pathWithPuCli() },
  });
  return { launched, firstTurn: firstTurnOf(state, launched) };
}


/** Types `text` into a running role agent and waits for the turn to end. */
export function nextTurn(state: EngineState, launched: LaunchedAgent, text: string): Promise<TurnResult> {
  return turn(state, launched.live, text);
}

/** A turn the role can build on: the agent waits again, or a one-shot tool ended cleanly. */
export function turnSucceeded(result: TurnResult): boolean {
  return result.outcome === "waiting" || (result.outcome === "exited" && result.exitCode === 0);
}

/**
 * Stops role agents (their worktrees stay); `finishedBy` when their part is done, so their exit
 * is recorded as finished by the plan rather than as a failure.
 */
export async function stopRoleAgents(state: EngineState, agentIds: readonly string[], finishedBy?: "plan"): Promise<void> {
  const live = agentIds.map((id) => state.sessions.get(id)).filter((l) => l !== undefined && l.session.exitCode === null);
  if (live.length === 0) return;
  const agents = live as NonNullable<(typeof live)[number]>[];
  await (finishedBy !== undefined ? stopFinishedAgents(agents, finishedBy, STOP_GRACE_MS) : stopAgents(agents, "kill", STOP_GRACE_MS));
}
