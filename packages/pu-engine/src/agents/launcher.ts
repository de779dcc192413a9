/**
 * The one way an agent process starts (and restarts): every path that runs an agent —
 * spawn, play, swarms, schedules, and the orchestration built on them — describes the
 * agent and calls `launchAgent` or `resumeAgent`. Each is a transaction: whatever it
 * created (worktree, PTY, registry entry) is undone when a later step fails, so a failed
 * start leaves nothing behind but a clear error.
 */
import * as fs from "node:fs/promises";
import path from "node:path";
import { agentDisplayName, usesSessionId } from "@pu/core/agent-types";
import { loadConfig, resolveAgentType, type AgentTypeConfig, type Config } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { isSessionId, newAgentId, newSessionId, newWorktreeId } from "@pu/core/ids";
import type { AgentEntry, Manifest, WorktreeEntry } from "@pu/core/manifest";
import { nameFromPrompt, normalizeWorktreeName, refuseControlCharacters, validateAgentName } from "@pu/core/names";
import { manifestPath, worktreesDir } from "@pu/core/paths";
import { agentTypeTrustItem } from "@pu/core/trust";
import { AgentSession } from "../session/agent-session.js";
import { installWorktreeHooks } from "../git/hooks.js";
import { createWorktree, removeWorktree, type CreatedWorktree } from "../git/worktree.js";
import { findExecutable } from "@pu/core/executables";
import { processStartTime } from "../process-info.js";
import { agentIn, nowIso, refuseWhileStopping, worktreeIn, type EngineState } from "../state.js";
import { buildEnv, buildLaunch, type Launch } from "./launch-command.js";
import type { LiveAgent } from "../session/live-agent.js";
import { dropSession, registerSession } from "./registry.js";
import { awaitAnswer, startTurn, type TurnResult } from "./turn.js";
import { turnHookArgs } from "./cli-hooks.js";

/** Where a new agent runs. */
export type LaunchPlacement =
  /** the project root itself */
  | { kind: "root" }
  /** an active worktree, by id or unique name */
  | { kind: "worktree"; worktree: string }
  /** a fresh worktree; named after `name`, else the prompt, else the agent type */
  | { kind: "new"; name?: string; base?: string };

export interface LaunchDescription {
  /** An initialized project (resolved by the caller). */
  projectRoot: string;
  /** Default: `terminal` with a command, else the project's default agent. */
  agentType?: string;
  prompt?: string;
  /** A command line replacing the type's program: the person's own, so no trust is asked. */
  command?: string;
  extraArgs?: string[];
  planMode?: boolean;
  unattended?: boolean;
  /** Extra environment; pu's own PU_* variables win. */
  env?: Record<string, string>;
  /** Written into a new worktree before the agent starts (env files sent from another machine). */
  files?: { path: string; data: Uint8Array }[];
  placement: LaunchPlacement;
  /** The agent's display name (for a new worktree the worktree takes the name, the agent its type's). */
  name?: string;
  cols?: number;
  rows?: number;
  /** Recorded on the manifest entry as given (a trigger binding, `noTrigger`...). */
  entryFields?: Partial<AgentEntry>;
  /** Written for the person in the reply, ahead of the launcher's own notes. */
  warnings?: string[];
}

export interface LaunchedAgent {
  agentId: string;
  cwd: string;
  entry: AgentEntry;
  worktreeId?: string;
  worktreePath?: string;
  branch?: string;
  warnings: string[];
  live: LiveAgent;
  /** The turn the typed spawn prompt starts (absent when the prompt went on the command line or there was none). */
  firstTurn?: Promise<TurnResult>;
}

/**
 * Finds the program before anything is created, so a missing binary is a clear
 * SPAWN_FAILED instead of a PTY that prints an error and dies.
 */
function ensureExecutable(file: string, cwd: string, envPath: string | undefined): void {
  if (findExecutable(file, cwd, envPath) !== undefined) return;
  throw new PuError(
    "SPAWN_FAILED",
    file.includes("/") ? `command '${file}' not found or not executable` : `command '${file}' not found on PATH`,
  );
}

/**
 * Refuses an agent type whose program is not installed, for a caller that records work now
 * and starts the agent later (a group's members, a plan's roles): SPAWN_FAILED naming the
 * executable, before anything is written.
 */
export function requireAgentProgram(config: Config, agentType: string, cwd: string): void {
  const typeConfig = agentTypeOrThrow(config, agentType);
  const launch = buildLaunch({ ...typeConfig, name: agentType }, { sessionId: usesSessionId(agentType) ? newSessionId() : undefined });
  try {
    ensureExecutable(launch.file, cwd, process.env.PATH);
  } catch (err) {
    throw new PuError("SPAWN_FAILED", `agent type '${agentType}' cannot start: ${(err as Error).message}`);
  }
}

/** The agent type's configuration, or INVALID_ARGUMENT naming the types the project knows. */
export function agentTypeOrThrow(config: Config, name: string): AgentTypeConfig {
  try {
    return resolveAgentType(config, name);
  } catch (err) {
    throw new PuError("INVALID_ARGUMENT", `unknown agent type '${name}' (known: ${Object.keys(config.agents).join(", ")})`, {
      cause: err,
    });
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

type Placement =
  | { kind: "root"; cwd: string }
  | { kind: "existing"; cwd: string; worktree: WorktreeEntry }
  | { kind: "new"; cwd: string; worktreeId: string; name: string; base?: string };

function place(m: Manifest, root: string, desc: LaunchDescription, agentType: string): Placement {
  const where = desc.placement;
  if (where.kind === "root") return { kind: "root", cwd: root };
  if (where.kind === "worktree") {
    const wt = worktreeIn(m, where.worktree);
    if (wt.status !== "active") {
      throw new PuError("INVALID_STATE", `worktree ${wt.id} (${wt.name}) is ${wt.status}; agents can only join an active worktree`);
    }
    return { kind: "existing", cwd: wt.path, worktree: wt };
  }
  const base =
    // Checked as text first: normalizing would quietly drop control characters a name must not have.
    (where.name !== undefined ? normalizeWorktreeName(refuseControlCharacters("worktree name", where.name)) : undefined) ??
    (desc.prompt ? nameFromPrompt(desc.prompt) : undefined) ??
    normalizeWorktreeName(agentType);
  const worktreeId = newWorktreeId();
  const placement: Placement = { kind: "new", cwd: path.join(worktreesDir(root), worktreeId), worktreeId, name: uniqueName(m, base) };
  if (where.base !== undefined) placement.base = where.base;
  return placement;
}

/** Starts a new agent: checks, worktree, PTY, registry, manifest entry; the prompt is typed after. */
/** Each file at its relative path inside the worktree: never absolute, never above it, never into .git. */
async function writeWorktreeFiles(worktreePath: string, files: { path: string; data: Uint8Array }[]): Promise<void> {
  for (const file of files) {
    const normalized = path.posix.normalize(file.path);
    if (path.posix.isAbsolute(normalized) || normalized === "." || normalized.startsWith("../") || normalized === ".." || normalized.split("/")[0] === ".git" || normalized.includes("\0")) {
      throw new PuError("INVALID_ARGUMENT", `file ${JSON.stringify(file.path)} is not a path inside the worktree`);
    }
    const target = path.join(worktreePath, normalized);
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.writeFile(target, file.data, { mode: 0o600 });
  }
}

export async function launchAgent(state: EngineState, desc: LaunchDescription): Promise<LaunchedAgent> {
  refuseWhileStopping(state);
  const root = desc.projectRoot;
  const warnings = [...(desc.warnings ?? [])];
  const config = await loadConfig(root);
  const agentType = desc.agentType ?? (desc.command !== undefined ? "terminal" : config.defaultAgent);
  const typeConfig = agentTypeOrThrow(config, agentType);
  if (desc.command === undefined) await state.trust.require(root, [agentTypeTrustItem(root, agentType, typeConfig)]);
  const agentId = newAgentId();
  const sessionId = usesSessionId(agentType) ? newSessionId() : undefined;
  let launch: Launch;
  try {
    launch = buildLaunch({ ...typeConfig, name: agentType }, {
      prompt: desc.prompt,
      sessionId,
      extraArgs: desc.extraArgs,
      command: desc.command,
      planMode: desc.planMode,
      unattended: desc.unattended,
    });
  } catch (err) {
    throw err instanceof PuError ? err : new PuError("SPAWN_FAILED", `cannot build the ${agentType} command: ${(err as Error).message}`);
  }

  const m = await state.store.read(root);
  const placement = place(m, root, desc, agentType);
  // Checked before any process starts: a failure after the spawn would leave a PTY with no manifest entry.
  const agentName =
    placement.kind === "new" ? agentDisplayName(agentType) : validateAgentName(desc.name ?? agentDisplayName(agentType));
  const worktreeId = placement.kind === "new" ? placement.worktreeId : placement.kind === "existing" ? placement.worktree.id : undefined;
  const env = buildEnv(process.env, { agentId, projectRoot: root, worktreeId, extra: desc.env });
  // A relative program path means relative to where the agent runs; the worktree does not exist yet.
  ensureExecutable(launch.file, placement.kind === "new" ? root : placement.cwd, env.PATH);

  let created: CreatedWorktree | undefined;
  if (placement.kind === "new") {
    created = await createWorktree({
      projectRoot: root,
      worktreesDir: worktreesDir(root),
      worktreeId: placement.worktreeId,
      name: placement.name,
      base: placement.base,
      envFiles: config.envFiles,
    });
    warnings.push(...created.notes);
    if (desc.files?.length) {
      try {
        await writeWorktreeFiles(created.path, desc.files);
      } catch (err) {
        await removeWorktree({ projectRoot: root, worktreesDir: worktreesDir(root), path: created.path, branch: created.branch }).catch(() => undefined);
        throw err;
      }
    }
  } else if (desc.files?.length) {
    throw new PuError("INVALID_ARGUMENT", "files are written into a new worktree only (not with --root or --worktree)");
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

  // The CLI's own turn-end hooks (only for the type's own command: a custom one may be anything).
  const hookArgs = desc.command === undefined ? turnHookArgs(agentType, state.home) : [];
  let session: AgentSession;
  try {
    session = AgentSession.spawn({
      agentId,
      file: launch.file,
      args: [...launch.args, ...hookArgs],
      cwd: placement.cwd,
      env,
      cols: desc.cols,
      rows: desc.rows,
      ringBytes: config.outputBufferBytes,
    });
  } catch (err) {
    await rollBackWorktree();
    throw err instanceof PuError ? err : new PuError("SPAWN_FAILED", `cannot start ${launch.file}: ${(err as Error).message}`);
  }
  // A prompt on the command line starts a turn as the program starts: what its screen shows
  // before it has visibly begun is no answer (see agentReadiness).
  if (desc.prompt && launch.promptToType === undefined) session.markSubmitted();

  // Checked right before registering, with no await in between: shutdown raises the flag
  // first and lists the sessions to stop later, so this agent is either on that list or refused.
  if (state.stopping) {
    await session.kill({ graceMs: 1000 }).catch(() => undefined);
    await rollBackWorktree();
    refuseWhileStopping(state);
  }
  const { live, entryReady } = registerSession(state, {
    agentId,
    projectRoot: root,
    worktreeId,
    agentType,
    cwd: placement.cwd,
    session,
    idleThresholdSeconds: config.idleThresholdSeconds,
    hooked: hookArgs.length > 0,
  });

  const startedAt = nowIso();
  const entry: AgentEntry = {
    id: agentId,
    name: agentName,
    agentType,
    status: "streaming",
    startedAt,
    pid: session.pid,
    ...desc.entryFields,
  };
  const startTime = processStartTime(session.pid);
  if (startTime !== null) entry.pidStartTime = startTime;
  if (sessionId) entry.sessionId = sessionId;
  if (desc.prompt) entry.prompt = desc.prompt;
  if (desc.command !== undefined) entry.command = desc.command;
  if (desc.planMode) entry.planMode = true;
  if (desc.env && Object.keys(desc.env).length > 0) entry.env = { ...desc.env };
  const launchSeal = await state.launchSeals.seal(root, entry);
  if (launchSeal !== undefined) entry.launchSeal = launchSeal;

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

  let firstTurn: Promise<TurnResult> | undefined;
  if (launch.promptToType !== undefined) {
    // Typed after the reply: the agent needs time to draw its prompt first.
    live.promptPending = true;
    const started = startTurn(state, live, launch.promptToType);
    void started.typed.finally(() => {
      live.promptPending = false;
      state.events.emit("agent_prompt_delivered", { live });
    });
    firstTurn = started.done;
  }
  state.events.emit("agent_started", {
    projectRoot: root,
    agentId,
    agentType,
    pid: session.pid,
    resumed: false,
    live,
    entry,
    ...(firstTurn ? { firstTurn } : {}),
  });
  state.log.event("spawn", {
    projectRoot: root,
    agentId,
    agentType,
    worktreeId,
    agentPid: session.pid,
    file: launch.file,
    cwd: placement.cwd,
  });

  const launched: LaunchedAgent = { agentId, cwd: placement.cwd, entry, warnings, live };
  if (firstTurn) launched.firstTurn = firstTurn;
  if (worktreeId) launched.worktreeId = worktreeId;
  if (created) {
    launched.worktreePath = created.path;
    launched.branch = created.branch;
  } else if (placement.kind === "existing") {
    launched.worktreePath = placement.worktree.path;
    launched.branch = placement.worktree.branch;
  }
  return launched;
}

/** `pu play`: restarts a suspended agent with its type's resume command, in the same directory. */
export async function resumeAgent(state: EngineState, root: string, agentId: string): Promise<AgentEntry> {
  refuseWhileStopping(state);
  const m = await state.store.read(root);
  const { agent, worktree } = agentIn(m, agentId);
  // Its group or plan started the work again with another agent after a daemon restart: resuming it would put two agents in one worktree.
  if (!agent.suspended && agent.replacedBy !== undefined) {
    throw new PuError("INVALID_STATE", `${agent.id} is not suspended: ${agent.replacedBy} replaced it after the daemon restart (its ${agent.finishedBy ?? "owner"}'s work goes on there)`);
  }
  if (!agent.suspended) throw new PuError("INVALID_STATE", `${agent.id} is not suspended`);
  if (state.isRunning(agent.id)) throw new PuError("INVALID_STATE", `${agent.id} is already running`);
  // Checked and claimed with no await in between: a second resume would start a second process.
  if (state.resuming.has(agent.id)) throw new PuError("INVALID_STATE", `${agent.id} is already being resumed`);
  state.resuming.add(agent.id);
  try {
    return await startResumed(state, root, agent, worktree);
  } finally {
    state.resuming.delete(agent.id);
  }
}

async function startResumed(state: EngineState, root: string, agent: AgentEntry, worktree: WorktreeEntry | undefined): Promise<AgentEntry> {
  const cwd = worktree ? worktree.path : root;
  // Before anything is recorded: an entry pu did not write is refused, and left as it is.
  await state.launchSeals.check(root, agent, manifestPath(root));
  if (agent.sessionId !== undefined && !isSessionId(agent.sessionId)) {
    throw new PuError("UNTRUSTED", `${agent.id}'s sessionId in ${manifestPath(root)} is not one pu made (not a UUID v4); pu will not pass it to ${agent.agentType}`);
  }

  let session: AgentSession;
  let idleThresholdSeconds: number;
  let hooked = false;
  try {
    if (worktree && worktree.status === "cleaned") throw new Error(`its worktree ${worktree.id} has been cleaned`);
    const config = await loadConfig(root);
    idleThresholdSeconds = config.idleThresholdSeconds;
    const type = config.agents[agent.agentType];
    if (!type) throw new Error(`agent type '${agent.agentType}' is no longer configured`);
    if (agent.command === undefined) await state.trust.require(root, [agentTypeTrustItem(root, agent.agentType, type)]);
    const launch = buildLaunch({ ...type, name: agent.agentType }, {
      resume: true,
      sessionId: agent.sessionId,
      command: agent.command,
      planMode: agent.planMode,
    });
    const env = buildEnv(process.env, { agentId: agent.id, projectRoot: root, worktreeId: worktree?.id, extra: agent.env });
    ensureExecutable(launch.file, cwd, env.PATH);
    const hookArgs = agent.command === undefined ? turnHookArgs(agent.agentType, state.home) : [];
    hooked = hookArgs.length > 0;
    session = AgentSession.spawn({ agentId: agent.id, file: launch.file, args: [...launch.args, ...hookArgs], cwd, env, ringBytes: config.outputBufferBytes });
  } catch (err) {
    const reason = (err as Error).message;
    await state
      .updateManifest(root, (fresh) => {
        agentIn(fresh, agent.id).agent.error = `resume failed: ${reason}`;
      })
      .catch((writeErr: unknown) => state.log.event("resume_record_failed", { projectRoot: root, agentId: agent.id, error: writeErr }));
    state.log.event("resume_failed", { projectRoot: root, agentId: agent.id, error: err });
    throw new PuError("RESUME_FAILED", `cannot resume ${agent.id}: ${reason}`, { cause: err });
  }

  // As in launchAgent: no await between this check and registering, so shutdown either
  // stops this process with the others or it never joins them.
  if (state.stopping) {
    await session.kill({ graceMs: 1000 }).catch(() => undefined);
    refuseWhileStopping(state);
  }
  // The previous (suspended) session's output is superseded by the new process's.
  dropSession(state, agent.id);
  const { live, entryReady } = registerSession(state, {
    agentId: agent.id,
    projectRoot: root,
    worktreeId: worktree?.id,
    agentType: agent.agentType,
    cwd,
    session,
    idleThresholdSeconds,
    hooked,
  });
  let updated: AgentEntry;
  try {
    updated = await state.updateManifest(root, (fresh) => {
      const entry = agentIn(fresh, agent.id).agent;
      delete entry.suspended;
      delete entry.suspendedAt;
      delete entry.error;
      delete entry.exitCode;
      delete entry.completedAt;
      delete entry.finishedBy;
      entry.status = "streaming";
      entry.pid = session.pid;
      const startTime = processStartTime(session.pid);
      if (startTime !== null) entry.pidStartTime = startTime;
      return { ...entry };
    });
  } catch (err) {
    // The manifest still names the old, suspended process: the new one must not run unseen.
    live.stopIntent = "kill";
    entryReady();
    await session.kill({ graceMs: 1000 }).catch(() => undefined);
    dropSession(state, agent.id);
    throw err;
  }
  entryReady();
  state.events.emit("agent_started", {
    projectRoot: root,
    agentId: agent.id,
    agentType: agent.agentType,
    pid: session.pid,
    resumed: true,
    live,
    entry: updated,
  });
  state.log.event("resume", { projectRoot: root, agentId: agent.id, agentPid: session.pid, cwd });
  return updated;
}

/**
 * The turn a launch with a prompt started: typed after start (it comes with the launch), or
 * given on the command line and followed from the agent's first byte.
 */
export function firstTurnOf(state: EngineState, launched: LaunchedAgent, signal?: AbortSignal): Promise<TurnResult> {
  return launched.firstTurn ?? awaitAnswer(state, launched.live, 0, signal ? { signal } : {});
}
