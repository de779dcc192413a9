import { loadConfig } from "@pu/core/config";
import { agentTypeTrustItem } from "@pu/core/trust";
import { PuError } from "@pu/core/errors";
import type { AgentEntry, WorktreeEntry } from "@pu/core/manifest";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { buildEnv, buildLaunch } from "../agent-launch.js";
import { AgentSession } from "../agent-session.js";
import { processStartTime } from "../process-info.js";
import { agentIn, dropSession, registerSession, type EngineState } from "../state.js";
import { ensureExecutable } from "./spawn.js";

/** `pu play`: restarts a suspended agent with its type's resume command, in the same directory. */
export async function handleResume(state: EngineState, req: RequestOf<"resume">): Promise<ResultOf<"resume">> {
  if (state.stopping) throw new PuError("INVALID_STATE", "the pu daemon is shutting down; try again in a moment");
  const root = await state.project(req.projectRoot);
  const m = await state.store.read(root);
  const { agent, worktree } = agentIn(m, req.agentId);
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

async function startResumed(state: EngineState, root: string, agent: AgentEntry, worktree: WorktreeEntry | undefined): Promise<ResultOf<"resume">> {
  const cwd = worktree ? worktree.path : root;

  let session: AgentSession;
  let idleThresholdSeconds: number;
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
    session = AgentSession.spawn({ agentId: agent.id, file: launch.file, args: launch.args, cwd, env, ringBytes: config.outputBufferBytes });
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

  // As in spawn: no await between this check and registering, so shutdown either stops
  // this process with the others or it never joins them.
  if (state.stopping) {
    await session.kill({ graceMs: 1000 }).catch(() => undefined);
    throw new PuError("INVALID_STATE", "the pu daemon is shutting down; try again in a moment");
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
      entry.status = "streaming";
      entry.pid = session.pid;
      const startTime = processStartTime(session.pid);
      if (startTime !== null) (entry as Record<string, unknown>).pidStartTime = startTime;
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
  state.log.event("resume", { projectRoot: root, agentId: agent.id, agentPid: session.pid, cwd });
  return { agent: updated };
}
