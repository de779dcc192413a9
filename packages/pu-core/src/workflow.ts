// A ticket type's workflow (`.pu/workflows/<TYPE>.yaml`): the steps an agent works a ticket
// through. Each step is one turn; a step may name its own agent, require an artifact, pass a
// gate (as trigger gates do), wait for a review, or fan out to a multi-agent group.
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { FLAG_LIKE_MESSAGE, isFlagLike } from "./argv-value.js";
import { TriggerGateSchema } from "./definitions.js";
import { AGGREGATE_MODES, JOIN_MODES, planGroupMembers } from "./group.js";
import { PuError } from "./errors.js";
import { parsePlaces } from "./placement.js";

export const REVIEW_KINDS = ["plan", "visual", "pr"] as const;
export const GROUP_STEP_TYPES = ["multi_model", "multi_prompt", "matrixed"] as const;

/** A relative path that stays where it starts: not absolute, no `..` segment (symlinks are checked where the file is). */
function isInsideRelativePath(value: string): boolean {
  if (value.startsWith("/") || value.startsWith("~") || /^[A-Za-z]:/.test(value)) return false;
  return !value.split(/[\\/]+/).includes("..");
}

/** An agent type or model name: never a value an agent CLI would read as a flag. */
const ArgvName = z.string().min(1).refine((v) => !isFlagLike(v), FLAG_LIKE_MESSAGE);

export const WorkflowStepSchema = z.object({
  name: z.string().regex(/^[a-z][a-z0-9_-]{0,39}$/, "must be a short lower-case name (plan, implement, test…)"),
  /** A template: {{TICKET_ID}}, {{TITLE}}, {{DESCRIPTION}}, {{STEP}}, {{OUTPUT_FILE}} and the ticket's vars. */
  prompt: z.string().min(1),
  agent: ArgvName.optional(),
  model: ArgvName.optional(),
  /** A path (relative to the worktree, and inside it) that must exist when the step is done. */
  artifact: z
    .string()
    .min(1)
    .refine((artifact) => isInsideRelativePath(artifact), "must be a path inside the worktree (relative, no '..')")
    .optional(),
  gate: TriggerGateSchema.optional(),
  max_retries: z.number().int().min(0).max(20).default(2),
  review: z.enum(REVIEW_KINDS).optional(),
  timeout_minutes: z.number().positive().optional(),
  /** The step's budget (USD, and tokens: all the provider reported): crossed, its turn is interrupted and the ticket waits for a decision. */
  max_cost: z.number().positive().optional(),
  max_tokens: z.number().int().positive().optional(),
  /** A multi-agent step (issue 13): the ticket goes on when the group is done. */
  type: z.enum(GROUP_STEP_TYPES).optional(),
  /** A group step whose members may share the ticket's worktree. */
  read_only: z.boolean().optional(),
  /** A group step's delegators (`claude`, `codex:gpt-5`); default: the step's agent. */
  agents: z.array(ArgvName).min(1).optional(),
  /** A multi_prompt or matrixed step's prompt variants (templates, after the shared `prompt`). */
  prompts: z.array(z.string().min(1)).min(1).optional(),
  aggregate: z.enum(AGGREGATE_MODES).optional(),
  join: z.enum(JOIN_MODES).optional(),
  quorum: z.number().int().min(1).optional(),
  /** The judge's agent type (aggregate: judge); default: the project's default agent. */
  judge: ArgvName.optional(),
  /** Where a group step's members run: `local` (this machine) and hosts' names (pu host list). */
  on: z.array(z.string().min(1)).min(1).optional(),
});
export type WorkflowStep = z.infer<typeof WorkflowStepSchema>;

export const WorkflowSchema = z.object({
  description: z.string().optional(),
  launch_mode: z.enum(["default", "yolo"]).default("default"),
  /** `merge`: the ticket's worktree is merged when its last step is done. */
  finish: z.enum(["merge"]).optional(),
  steps: z.array(WorkflowStepSchema).min(1, "a workflow needs at least one step"),
});
export type Workflow = z.infer<typeof WorkflowSchema>;

export interface ParsedWorkflow {
  workflow: Workflow;
  /** Unknown keys, one line each naming the file and the key (ignored, never fatal). */
  warnings: string[];
}

/** CONFIG_ERROR naming the file and the field; unknown keys become warnings. */
export function parseWorkflow(text: string, path: string): ParsedWorkflow {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new PuError("CONFIG_ERROR", `${path}: not valid YAML (${(error as Error).message.split("\n")[0]})`);
  }
  const parsed = WorkflowSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = (issue?.path ?? []).map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`)).join("");
    throw new PuError("CONFIG_ERROR", `${path}: ${field || "(top level)"}: ${issue?.message ?? "invalid"}`);
  }
  const names = parsed.data.steps.map((s) => s.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new PuError("CONFIG_ERROR", `${path}: steps: step name "${duplicate}" is used twice`);
  parsed.data.steps.forEach((step, i) => checkGroupStep(step, `${path}: steps[${i}]`));
  return { workflow: parsed.data, warnings: unknownKeys(raw, path) };
}

const GROUP_ONLY_KEYS = ["agents", "prompts", "aggregate", "join", "quorum", "judge", "read_only", "on"] as const;

/** A group step must describe a group pu can run; the group keys mean nothing on other steps. */
function checkGroupStep(step: WorkflowStep, where: string): void {
  if (step.type === undefined) {
    const stray = GROUP_ONLY_KEYS.find((k) => step[k] !== undefined);
    if (stray) throw new PuError("CONFIG_ERROR", `${where}: ${stray} needs a group step (type: multi_model, multi_prompt or matrixed)`);
    return;
  }
  if (step.aggregate === "gate" && step.gate === undefined) throw new PuError("CONFIG_ERROR", `${where}: aggregate: gate needs a gate to run in every member's worktree`);
  if (step.review !== undefined || step.artifact !== undefined) throw new PuError("CONFIG_ERROR", `${where}: a group step has no ${step.review !== undefined ? "review" : "artifact"}; put it on the next step`);
  if (step.on !== undefined && step.read_only) throw new PuError("CONFIG_ERROR", `${where}: on: places members in worktrees of their own; a read_only step's members share the ticket's`);
  try {
    if (step.on !== undefined) parsePlaces(step.on, "on");
    planGroupMembers({ kind: step.type, delegators: step.agents ?? [step.agent ?? "default"], sharedPrompt: step.prompt, prompts: step.prompts ?? [] });
  } catch (err) {
    throw new PuError("CONFIG_ERROR", `${where}: ${(err as Error).message}`);
  }
}

function unknownKeys(raw: unknown, path: string): string[] {
  if (raw === null || typeof raw !== "object") return [];
  const top = Object.keys(raw).filter((k) => !(k in WorkflowSchema.shape)).map((k) => `${path}: unknown key "${k}" ignored`);
  const steps = (raw as { steps?: unknown }).steps;
  const inSteps = Array.isArray(steps)
    ? steps.flatMap((step, i) =>
        step !== null && typeof step === "object"
          ? Object.keys(step).filter((k) => !(k in WorkflowStepSchema.shape)).map((k) => `${path}: steps[${i}]: unknown key "${k}" ignored`)
          : [],
      )
    : [];
  return [...top, ...inSteps];
}

/** The agent type a step runs with: the step's, else the ticket's, else the project's preferred tool, else its default agent. */
export function stepAgent(step: Pick<WorkflowStep, "agent">, ticket: { agent?: string | undefined }, preferredTool: string | null | undefined, defaultAgent: string): string {
  return step.agent ?? ticket.agent ?? preferredTool ?? defaultAgent;
}
