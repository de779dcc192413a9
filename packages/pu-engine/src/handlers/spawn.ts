import path from "node:path";
import { loadConfig, resolveAgentType, type Config } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { checkPromptText } from "@pu/core/prompt-text";
import { agentTypeTrustItem } from "@pu/core/trust";
import { newAgentId, newSessionId, newWorktreeId } from "@pu/core/ids";
import type { AgentEntry, Manifest, WorktreeEntry } from "@pu/core/manifest";
import { normalizeWorktreeName, refuseControlCharacters, validateAgentName } from "@pu/core/names";
import { worktreesDir } from "@pu/core/paths";
import type { RequestOf, SpawnResult } from "@pu/ipc/protocol";
import { buildEnv, buildLaunch, deliverPrompt, type Launch } from "../agent-launch.js";
import { AgentSession } from "../agent-session.js";
import { applySpawnTemplate, bindTrigger, spawnTriggerBinding } from "../definitions-service.js";
import { installWorktreeHooks } from "../git-hooks.js";
import { findExecutable, processStartTime } from "../process-info.js";
import { dropSession, nowIso, registerSession, worktreeIn, type EngineState } from "../state.js";
import { createWorktree, removeWorktree, type CreatedWorktree } from "../worktrees.js";

const DISPLAY_NAMES: Record<string, string> = {
  claude: "Claude",
  codex: "Codex",
  opencode: "OpenCode",
  terminal: "Terminal",
};

export function displayName(agentType: string): string {
  return DISPLAY_NAMES[agentType] ?? agentType;
}


/** The first few words of the prompt make a readable worktree name. */
function nameFromPrompt(prompt: string): string | undefined {
  const words = prompt.trim().split(/\s+/).slice(0, 5).join(" ");
  try {
    return normalizeWorktreeName(words).slice(0, 40).replace(/-+$/, "") || undefined;
  } catch {
    return undefined;
  }
}

/** `base`, `base-2`, `base-3`… whichever no worktree of the project has used. */
function uniqueName(m: Manifest, base: string): string {
  const taken = new Set(Object.values(m.worktrees).map((w) => w.name));
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/**
 * Finds the program before anything is created, so a missing binary is a clear
 * SPAWN_FAILED instead of a PTY that prints an error and dies.
 */
export function ensureExecutable(file: string, cwd: string, envPath: string | undefined): void {
  if (findExecutable(file, cwd, envPath) !== undefined) return;
  throw new PuError(
    "SPAWN_FAILED",
    file.includes("/") ? `command '${file}' not found or not executable` : `command '${file}' not found on PATH`,
  );
}

function agentTypeOrThrow(config: Config, name: string) {
  try {
    return resolveAgentType(config, name);
  } catch (err) {
    throw new PuError("INVALID_ARGUMENT", `unknown agent type '${name}' (known: ${Object.keys(config.agents).join(", ")})`, {
      cause: err,
    });
  }
}

type Placement =
  | { kind: "root"; cwd: string }
  | { kind: "existing"; cwd: string; worktree: WorktreeEntry }
  | { kind: "new"; cwd: string; worktreeId: string; name: string };

function place(m: Manifest, root: string, req: RequestOf<"spawn">, agentType: string): Placement {
  if (req.root && req.worktree) throw new PuError("INVALID_ARGUMENT", "--root and --worktree cannot be combined");
  if (req.root) return { kind: "root", cwd: root };
  if (req.worktree) {
    const wt = worktreeIn(m, req.worktree);
    if (wt.status !== "active") {
      throw new PuError("INVALID_STATE", `worktree ${wt.id} (${wt.name}) is ${wt.status}; agents can only join an active worktree`);
    }
    return { kind: "existing", cwd: wt.path, worktree: wt };
  }
  const base =
    // Checked as text first: normalizing would quietly drop control characters a name must not have.
    (req.name !== undefined ? normalizeWorktreeName(refuseControlCharacters("worktree name", req.name)) : undefined) ??
    (req.prompt ? nameFromPrompt(req.prompt) : undefined) ??
    normalizeWorktreeName(agentType);
  const worktreeId = newWorktreeId();
  return { kind: "new", cwd: path.join(worktreesDir(root), worktreeId), worktreeId, name: uniqueName(m, base) };
}

export async function handleSpawn(state: EngineState, req: RequestOf<"spawn">): Promise<SpawnResult> {
  if (state.stopping) throw new PuError("INVALID_STATE", "the pu daemon is shutting down; try again in a moment");
  const root = await state.project(req.projectRoot);

  // A template renders into the prompt (its frontmatter may set agent/command).
  const templated = await applySpawnTemplate(state, root, req);
  req = templated.req;
  if (req.prompt !== undefined) req = { ...req, prompt: checkPromptText(req.prompt) };
  const warnings: string[] = [...templated.warnings];

  const config = await loadConfig(root);
  // Resolved before anything is created, so a missing trigger leaves nothing behind.
  const triggerFields = await spawnTriggerBinding(state, root, req, config);
  if (req.vars && Object.keys(req.vars).length > 0 && req.template === undefined && triggerFields === undefined) {
    warnings.push(`--var has no effect: no template or trigger of this spawn uses ${Object.keys(req.vars).join(", ")}`);
  }
  const agentType = req.agent ?? (req.command !== undefined ? "terminal" : config.defaultAgent);
  const typeConfig = agentTypeOrThrow(config, agentType);
  // A command given with the request is the person's own; a project agent type is the repository's.
  if (req.command === undefined) await state.trust.require(root, [agentTypeTrustItem(root, agentType, typeConfig)]);
  const agentId = newAgentId();
  const sessionId = agentType === "claude" ? newSessionId() : undefined;
  let launch: Launch;
  try {
    launch = buildLaunch({ ...typeConfig, name: agentType }, {
      prompt: req.prompt,
      sessionId,
      extraArgs: req.extraArgs,
      command: req.command,
      planMode: req.planMode,
    });
  } catch (err) {
    throw err instanceof PuError ? err : new PuError("SPAWN_FAILED", `cannot build the ${agentType} command: ${(err as Error).message}`);
  }

  const m = await state.store.read(root);
  const placement = place(m, root, req, agentType);
  // Checked before any process starts: a failure after the spawn would leave a PTY with no manifest entry.
  const agentName = placement.kind === "new" ? displayName(agentType) : validateAgentName(req.name ?? displayName(agentType));
  const worktreeId = placement.kind === "new" ? placement.worktreeId : placement.kind === "existing" ? placement.worktree.id : undefined;
  const env = buildEnv(process.env, { agentId, projectRoot: root, worktreeId, extra: req.env });
  // A relative program path means relative to where the agent runs; the worktree does not exist yet.
  ensureExecutable(launch.file, placement.kind === "new" ? root : placement.cwd, env.PATH);

  let created: CreatedWorktree | undefined;
  if (placement.kind === "new") {
    created = await createWorktree({
      projectRoot: root,
      worktreesDir: worktreesDir(root),
      worktreeId: placement.worktreeId,
      name: placement.name,
      base: req.base,
      envFiles: config.envFiles,
    });
    warnings.push(...created.notes);
  }
  const rollBackWorktree = async (): Promise<void> => {
    if (!created) return;
    await removeWorktree({ projectRoot: root, worktreesDir: worktreesDir(root), path: created.path, branch: created.branch }).catch(
      (err: unknown) => state.log.event("spawn_rollback_failed", { projectRoot: root, path: created?.path, error: err }),
    );
  };
  if (created) {
    try {
      warnings.push(...(await installWorktreeHooks(state, root, created.path)));
    } catch (err) {
      await rollBackWorktree();
      throw err;
    }
  }

  let session: AgentSession;
  try {
    session = AgentSession.spawn({
      agentId,
      file: launch.file,
      args: launch.args,
      cwd: placement.cwd,
      env,
      cols: req.cols,
      rows: req.rows,
      ringBytes: config.outputBufferBytes,
    });
  } catch (err) {
    await rollBackWorktree();
    throw err instanceof PuError ? err : new PuError("SPAWN_FAILED", `cannot start ${launch.file}: ${(err as Error).message}`);
  }

  // Checked right before registering, with no await in between: shutdown raises the flag
  // first and lists the sessions to stop later, so this agent is either on that list or refused.
  if (state.stopping) {
    await session.kill({ graceMs: 1000 }).catch(() => undefined);
    await rollBackWorktree();
    throw new PuError("INVALID_STATE", "the pu daemon is shutting down; try again in a moment");
  }
  const { live, entryReady } = registerSession(state, {
    agentId,
    projectRoot: root,
    worktreeId,
    agentType,
    cwd: placement.cwd,
    session,
    idleThresholdSeconds: config.idleThresholdSeconds,
  });

  const startedAt = nowIso();
  const entry: AgentEntry = {
    id: agentId,
    name: agentName,
    agentType,
    status: "streaming",
    startedAt,
    pid: session.pid,
  };
  const startTime = processStartTime(session.pid);
  if (startTime !== null) (entry as Record<string, unknown>).pidStartTime = startTime;
  if (sessionId) entry.sessionId = sessionId;
  if (req.prompt) entry.prompt = req.prompt;
  if (req.command !== undefined) entry.command = req.command;
  if (req.planMode) entry.planMode = true;
  if (req.env && Object.keys(req.env).length > 0) entry.env = { ...req.env };
  if (req.noTrigger) entry.noTrigger = true;
  if (triggerFields) bindTrigger(entry, triggerFields);

  try {
    await state.updateManifest(root, (fresh) => {
      let agents: Record<string, AgentEntry>;
      if (placement.kind === "new" && created) {
        const wt: WorktreeEntry = {
          id: placement.worktreeId,
          name: created.name,
          path: created.path,
          branch: created.branch,
          baseBranch: created.baseBranch,
          status: "active",
          agents: {},
          createdAt: startedAt,
        };
        fresh.worktrees[wt.id] = wt;
        agents = wt.agents;
      } else if (placement.kind === "existing") {
        const wt = fresh.worktrees[placement.worktree.id];
        if (!wt || wt.status !== "active") throw new PuError("INVALID_STATE", `worktree ${placement.worktree.id} is no longer active`);
        agents = wt.agents;
      } else {
        agents = fresh.agents;
      }
      agents[agentId] = entry;
    });
  } catch (err) {
    live.stopIntent = "kill";
    entryReady();
    await session.kill({ graceMs: 1000 }).catch(() => undefined);
    dropSession(state, agentId);
    await rollBackWorktree();
    throw err;
  }
  entryReady();

  if (launch.promptToType !== undefined) {
    const text = launch.promptToType;
    // Typed after the reply: the agent needs time to draw its prompt first.
    live.promptPending = true;
    const delivery = deliverPrompt(session, text)
      .catch((err: unknown) => state.log.event("prompt_delivery_failed", { projectRoot: root, agentId, error: err }))
      .finally(() => {
        live.promptPending = false;
        state.statusWatch.recompute(live);
      });
    // The first trigger action waits for the agent's answer to this prompt.
    if (triggerFields) state.triggers?.holdWhile(agentId, delivery);
  }
  state.log.event("spawn", {
    projectRoot: root,
    agentId,
    agentType,
    worktreeId,
    agentPid: session.pid,
    file: launch.file,
    cwd: placement.cwd,
  });

  const result: SpawnResult = { agentId, cwd: placement.cwd, agent: entry, warnings };
  if (worktreeId) result.worktreeId = worktreeId;
  if (created) {
    result.worktreePath = created.path;
    result.branch = created.branch;
  } else if (placement.kind === "existing") {
    result.worktreePath = placement.worktree.path;
    result.branch = placement.worktree.branch;
  }
  return result;
}
