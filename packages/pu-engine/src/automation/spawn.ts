/**
 * A spawn as people and definitions ask for it — a template to render, a trigger to bind,
 * variables — turned into a launch description for the launcher. The spawn request,
 * swarms and schedules all start agents through here.
 */
import { loadConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { checkPromptText } from "@pu/core/prompt-text";
import { launchAgent, type LaunchedAgent, type LaunchPlacement } from "../agents/launcher.js";
import { refuseWhileStopping, type EngineState } from "../state.js";
import { applySpawnTemplate, spawnTriggerBinding, type SpawnFields } from "./definitions.js";

function placementOf(fields: SpawnFields): LaunchPlacement {
  if (fields.root && fields.worktree) throw new PuError("INVALID_ARGUMENT", "--root and --worktree cannot be combined");
  if (fields.root) return { kind: "root" };
  if (fields.worktree) return { kind: "worktree", worktree: fields.worktree };
  const placement: LaunchPlacement = { kind: "new" };
  if (fields.name !== undefined) placement.name = fields.name;
  if (fields.base !== undefined) placement.base = fields.base;
  return placement;
}

/** Starts one agent in `root` (an initialized project) from spawn fields. */
export async function spawnAgent(state: EngineState, root: string, asked: SpawnFields): Promise<LaunchedAgent> {
  refuseWhileStopping(state);
  // A template renders into the prompt (its frontmatter may set agent/command).
  const templated = await applySpawnTemplate(state, root, asked);
  const fields = templated.req;
  const prompt = fields.prompt !== undefined ? checkPromptText(fields.prompt) : undefined;
  const warnings = [...templated.warnings];

  const config = await loadConfig(root);
  // Resolved before anything is created, so a missing trigger leaves nothing behind.
  const triggerFields = await spawnTriggerBinding(state, root, fields, config);
  if (fields.vars && Object.keys(fields.vars).length > 0 && fields.template === undefined && triggerFields === undefined) {
    warnings.push(`--var has no effect: no template or trigger of this spawn uses ${Object.keys(fields.vars).join(", ")}`);
  }
  const placement = placementOf(fields);
  return launchAgent(state, {
    projectRoot: root,
    ...(fields.agent !== undefined ? { agentType: fields.agent } : {}),
    ...(prompt !== undefined ? { prompt } : {}),
    ...(fields.command !== undefined ? { command: fields.command } : {}),
    ...(fields.extraArgs !== undefined ? { extraArgs: fields.extraArgs } : {}),
    ...(fields.planMode ? { planMode: true } : {}),
    ...(fields.yolo ? { unattended: true } : {}),
    ...(fields.env !== undefined ? { env: fields.env } : {}),
    ...(fields.files !== undefined ? { files: fields.files } : {}),
    placement,
    // For a new worktree the name is the worktree's (see placementOf).
    ...(fields.name !== undefined && placement.kind !== "new" ? { name: fields.name } : {}),
    ...(fields.cols !== undefined ? { cols: fields.cols } : {}),
    ...(fields.rows !== undefined ? { rows: fields.rows } : {}),
    entryFields: { ...(fields.noTrigger ? { noTrigger: true } : {}), ...triggerFields },
    warnings,
  });
}
