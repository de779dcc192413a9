/**
 * Usage statistics: every agent exit (a person's spawn, the queue's, a group's) adds a run to
 * `project_llm_stats` in state.json, per project, tool (agent type) and model, with the tokens
 * and cost its CLI recorded (optional fields beside the counts, so older files and readers work).
 */
import { loadConfig } from "@pu/core/config";
import { recordUsage } from "@pu/core/operator-state";
import type { UsageFigures } from "@pu/ipc/protocol";
import type { EngineEventMap } from "../../engine-events.js";
import type { EngineState } from "../../state.js";
import type { OperatorStateStore } from "./state-store.js";

/** `--model X` / `--model=X` in an agent type's configured launch arguments. */
function modelInArgs(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--model" || arg === "-m") return args[i + 1];
    if (arg.startsWith("--model=")) return arg.slice("--model=".length);
  }
  return undefined;
}

/** The model of an exit: the agent's own (`--model`), else its type's configured default, else "default". */
async function modelOf(exit: EngineEventMap["agent_exit"]): Promise<string> {
  if (exit.model !== undefined) return exit.model;
  try {
    const config = await loadConfig(exit.projectRoot);
    return modelInArgs(config.agents[exit.agentType]?.launchArgs ?? []) ?? "default";
  } catch {
    return "default";
  }
}

export async function recordAgentExit(
  state: EngineState,
  store: OperatorStateStore,
  exit: EngineEventMap["agent_exit"],
  succeeded: boolean,
  /** The run's tokens and cost, read to the end of its records (null: it left none). */
  figures: () => Promise<UsageFigures | null>,
): Promise<void> {
  if (store.error !== undefined) {
    state.log.event("usage_not_recorded", { agentId: exit.agentId, problem: store.error });
    return;
  }
  try {
    const model = await modelOf(exit);
    const used = await figures().catch(() => null);
    await store.update((s) =>
      recordUsage(s, { project: exit.projectRoot, tool: exit.agentType, model, succeeded, seconds: exit.durationMs / 1000, at: new Date(), ...(used ? { tokens: used } : {}) }),
    );
  } catch (err) {
    state.log.event("usage_record_failed", { agentId: exit.agentId, error: err });
  }
}
