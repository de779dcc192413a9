// Git-hook gates: the gates of triggers with `on: pre_commit` / `pre_push`, run when pu's
// hook script (git/hooks.ts) calls `pu gate <event>` from a commit or push in a worktree.
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { listDefinitions, loadDefinition, type TriggerDefinition } from "@pu/core/definitions";
import { PuError } from "@pu/core/errors";
import { renderShellCommand } from "@pu/core/template";
import { triggerTrustItem } from "@pu/core/trust";
import type { GateResult } from "@pu/ipc/protocol";
import type { HookEvent } from "../git/hooks.js";
import { gitTopLevel } from "../git/runner.js";
import type { EngineState } from "../state.js";
import { definitionScopes } from "./definitions.js";
import { appendGateRun, runGate, toGateRun } from "../gates/gates.js";

/** Agent id under which git-hook gate runs are recorded (`.pu/gates/hook-<event>.jsonl`). */
const HOOK_RECORD_AGENT = "hook";

/** The gates of every trigger listening to `event` (local wins over global), run in `cwd` and recorded. */
export async function runHookGates(state: EngineState, root: string, event: HookEvent, cwd: string): Promise<GateResult> {
  const asked = path.resolve(root, cwd);
  if (!existsSync(asked) || !statSync(asked).isDirectory()) {
    throw new PuError("INVALID_ARGUMENT", `gate directory ${asked} does not exist`);
  }
  // git runs hooks at the top of the checkout; a gate started by hand from a subdirectory
  // must check the same tree, or `pnpm test` there would test only part of it.
  const dir = (await gitTopLevel(asked)) ?? asked;
  const scopes = definitionScopes(state, root);
  const triggers: TriggerDefinition[] = [];
  for (const summary of await listDefinitions("trigger", scopes)) {
    if (summary.error !== undefined) {
      state.log.event("gate_trigger_invalid", { projectRoot: root, name: summary.name, error: summary.error });
      continue;
    }
    const loaded = await loadDefinition("trigger", summary.name, scopes);
    if (loaded.parsed.on !== event) continue;
    // An untrusted gate blocks the commit or push and says why, rather than being skipped.
    await state.trust.require(root, [triggerTrustItem(loaded)]);
    triggers.push(loaded.parsed);
  }

  const result: GateResult = { passed: true, runs: [] };
  for (const trigger of triggers) {
    const vars = trigger.variables ?? {};
    for (const [seqIndex, action] of trigger.sequence.entries()) {
      if (!action.gate) continue;
      const { command, env: varEnv } = renderShellCommand(action.gate.run, vars);
      const outcome = await runGate({
        command,
        cwd: dir,
        timeoutSeconds: action.gate.timeout_seconds,
        env: { ...varEnv, PU_PROJECT_ROOT: root, PU_TRIGGER: trigger.name, PU_GATE_EVENT: event },
      });
      const run = toGateRun(outcome, { agentId: HOOK_RECORD_AGENT, triggerName: trigger.name, seqIndex, expectedExit: action.gate.expect_exit });
      await appendGateRun(root, `hook-${event}`, run).catch((err: unknown) =>
        state.log.event("gate_record_failed", { projectRoot: root, event, error: err }),
      );
      if (!run.passed) result.passed = false;
      const { agentId: _agentId, seqIndex: _seqIndex, ...reported } = run;
      result.runs.push(reported);
    }
  }
  state.log.event("hook_gates", { projectRoot: root, event, cwd: dir, passed: result.passed, runs: result.runs.length });
  return result;
}
