// Runs bound triggers: each time an agent becomes waiting, its next action runs (gate,
// then inject). One driver per bound agent walks the sequence: an inject is a turn
// (agents/turn.ts), so the driver goes on by itself once the agent has answered; a new
// driver starts when the status watch reports a bound agent waiting, when a trigger is
// assigned, or (after the spawn prompt's answer) when a bound agent starts.
//
// The manifest is the state: every transition is written (under the manifest lock)
// before the runner moves on, so `pu status` shows it and a restarted daemon continues
// where the last one stopped. A binding whose state is `gating` when no gate of this
// daemon is running (the previous daemon died mid-gate) re-runs that gate.
import { loadDefinition, renderTemplate, type TriggerAction, type TriggerDefinition } from "@pu/core/definitions";
import { isPuError } from "@pu/core/errors";
import { findAgent, type AgentEntry } from "@pu/core/manifest";
import { renderShellCommand } from "@pu/core/template";
import { triggerTrustItem } from "@pu/core/trust";
import { sessionStatus, type LiveAgent } from "../session/live-agent.js";
import { startTurn, type TurnResult } from "../agents/turn.js";
import type { EngineState } from "../state.js";
import { definitionScopes, triggerVarsOf } from "./definitions.js";
import { appendGateRun, runGate, toGateRun, type GateOutcome } from "../gates/gates.js";

/** How much gate output a fix request quotes. */
const FIX_REQUEST_OUTPUT_BYTES = 4 * 1024;

interface Driver {
  live: LiveAgent;
  /** Stops the driver's gate or turn when the runner stops. */
  abort: AbortController;
  /** Asked to start while this one ran (e.g. the binding was replaced): look again when it ends. */
  again: boolean;
}

/** The binding moved on (reassigned, or the agent is gone) while a step ran. */
class BindingChanged extends Error {}

interface Expected {
  triggerName: string;
  seqIndex: number;
}

export class TriggerRunner {
  private readonly drivers = new Map<string, Driver>();
  private stopped = false;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(private readonly state: EngineState) {}

  start(): void {
    const { events } = this.state;
    this.unsubscribe.push(
      events.on("agent_status", (change) => {
        if (change.to === "waiting") this.kick(change.agentId);
      }),
      events.on("trigger_assigned", ({ agentId }) => this.kick(agentId)),
      events.on("agent_started", ({ live, entry, firstTurn }) => {
        // The first action waits for the agent's answer to its spawn prompt.
        if (firstTurn && entry.triggerName !== undefined && !entry.noTrigger) this.drive(live, firstTurn);
      }),
    );
  }

  stop(): void {
    this.stopped = true;
    for (const off of this.unsubscribe) off();
    for (const driver of this.drivers.values()) driver.abort.abort();
    this.drivers.clear();
  }

  /** Asks: is this agent waiting with a trigger action due? Safe to call any time, any number of times. */
  private kick(agentId: string): void {
    if (this.stopped) return;
    const running = this.drivers.get(agentId);
    if (running) {
      running.again = true;
      return;
    }
    const live = this.state.sessions.get(agentId);
    if (!live || live.session.exitCode !== null || sessionStatus(live) !== "waiting") return;
    this.drive(live);
  }

  /** Walks the agent's bound sequence (after `before` settles) until it must wait for something else. */
  private drive(live: LiveAgent, before?: Promise<unknown>): void {
    if (this.drivers.has(live.agentId)) return;
    const driver: Driver = { live, abort: new AbortController(), again: false };
    this.drivers.set(live.agentId, driver);
    void (async () => {
      if (before) {
        const answer = (await before) as TurnResult | undefined;
        if (answer && answer.outcome !== "waiting") return;
      }
      await this.walk(driver);
    })()
      .catch((err: unknown) => {
        if (!(err instanceof BindingChanged)) {
          this.state.log.event("trigger_step_failed", { projectRoot: live.projectRoot, agentId: live.agentId, error: err });
        }
      })
      .finally(() => {
        if (this.drivers.get(live.agentId) !== driver) return;
        this.drivers.delete(live.agentId);
        if (driver.again && !this.stopped) this.kick(live.agentId);
      });
  }

  /** Runs due actions; each inject is a turn whose answer leads straight to the next action. */
  private async walk(driver: Driver): Promise<void> {
    const { live } = driver;
    await live.entryWritten;
    for (;;) {
      if (this.stopped || driver.abort.signal.aborted || live.session.exitCode !== null) return;
      if (this.state.sessions.get(live.agentId) !== live) return;
      const m = await this.state.store.read(live.projectRoot);
      const agent = findAgent(m, live.agentId)?.agent;
      if (!agent || agent.suspended || agent.noTrigger || agent.triggerName === undefined) return;
      if (agent.triggerState !== "active" && agent.triggerState !== "gating") return;
      const expected: Expected = { triggerName: agent.triggerName, seqIndex: agent.triggerSeqIndex ?? 0 };

      const trigger = await this.loadBoundTrigger(live, expected);
      if (!trigger) return;
      const action = trigger.sequence[expected.seqIndex];
      if (!action) {
        await this.persist(live, expected, (a) => {
          a.triggerState = "completed";
          a.triggerTotal = trigger.sequence.length;
        });
        return;
      }
      const vars: Record<string, string> = { ...trigger.variables, ...triggerVarsOf(agent) };

      if (action.gate) {
        const verdict = await this.runActionGate(driver, trigger, action, expected, vars, agent.gateAttempts ?? 0);
        if (verdict === "stop") return;
        // A fix request was answered: the same action's gate runs again.
        if (verdict === "retry") continue;
      }
      const last = expected.seqIndex + 1 >= trigger.sequence.length;
      let answer: Promise<TurnResult> | undefined;
      if (action.inject !== undefined) {
        const started = startTurn(this.state, live, renderTemplate(action.inject, vars).text, { signal: driver.abort.signal });
        if (!(await started.typed)) return; // exited while we waited to type
        answer = started.done;
      }
      await this.persist(live, expected, (a) => {
        a.triggerSeqIndex = expected.seqIndex + 1;
        a.triggerTotal = trigger.sequence.length;
        a.gateAttempts = 0;
        a.triggerState = last ? "completed" : "active";
      });
      this.state.log.event("trigger_advanced", {
        projectRoot: live.projectRoot,
        agentId: live.agentId,
        trigger: expected.triggerName,
        seqIndex: expected.seqIndex + 1,
        completed: last,
      });
      if (last) return;
      // A gate-only action typed nothing: go on to the next one now. After an inject, once answered.
      if (answer && (await answer).outcome !== "waiting") return;
    }
  }

  /** The trigger the agent is bound to; a missing or broken file fails the binding (cleanly). */
  private async loadBoundTrigger(live: LiveAgent, expected: Expected): Promise<TriggerDefinition | undefined> {
    try {
      const loaded = await loadDefinition("trigger", expected.triggerName, definitionScopes(this.state, live.projectRoot));
      // Checked on every use: the file may have changed since the agent was bound.
      await this.state.trust.require(live.projectRoot, [triggerTrustItem(loaded)]);
      return loaded.parsed;
    } catch (err) {
      const error =
        isPuError(err) && err.code === "NOT_FOUND"
          ? `trigger ${expected.triggerName} no longer exists`
          : `trigger ${expected.triggerName} cannot be used: ${(err as Error).message}`;
      await this.persist(live, expected, (a) => {
        a.triggerState = "failed";
        a.error = error;
      });
      this.state.log.event("trigger_failed", { projectRoot: live.projectRoot, agentId: live.agentId, error });
      return undefined;
    }
  }

  /**
   * Runs the action's gate. `pass`: go on. On failure with a retry left, a fix request is
   * typed and answered (`retry`); otherwise the binding fails (`stop`).
   */
  private async runActionGate(
    driver: Driver,
    trigger: TriggerDefinition,
    action: TriggerAction,
    expected: Expected,
    vars: Record<string, string>,
    attempts: number,
  ): Promise<"pass" | "retry" | "stop"> {
    const { live } = driver;
    const gate = action.gate;
    if (!gate) return "pass";
    await this.persist(live, expected, (a) => {
      a.triggerState = "gating";
    });
    const { command, env: varEnv } = renderShellCommand(gate.run, vars);
    const outcome: GateOutcome = await runGate({
        command,
        cwd: live.cwd,
        timeoutSeconds: gate.timeout_seconds,
        signal: driver.abort.signal,
        env: {
          ...varEnv,
          PU_AGENT_ID: live.agentId,
          PU_PROJECT_ROOT: live.projectRoot,
          PU_TRIGGER: trigger.name,
          PU_GATE_ATTEMPT: String(attempts + 1),
        },
      });
    if (outcome.aborted) return "stop"; // the agent exited or the daemon stops: leave the state as persisted
    const record = toGateRun(outcome, {
      agentId: live.agentId,
      triggerName: trigger.name,
      seqIndex: expected.seqIndex,
      expectedExit: gate.expect_exit,
    });
    await appendGateRun(live.projectRoot, live.agentId, record).catch((err: unknown) =>
      this.state.log.event("gate_record_failed", { agentId: live.agentId, error: err }),
    );
    const passed = record.passed;
    this.state.log.event("gate", {
      projectRoot: live.projectRoot,
      agentId: live.agentId,
      trigger: trigger.name,
      seqIndex: expected.seqIndex,
      exitCode: outcome.exitCode,
      timedOut: outcome.timedOut,
      passed,
    });
    if (passed) return "pass";

    if (attempts < action.max_retries) {
      await this.persist(live, expected, (a) => {
        a.gateAttempts = attempts + 1;
        a.triggerState = "active";
      });
      const fix = startTurn(this.state, live, fixRequest(outcome, gate.expect_exit, attempts + 1, action.max_retries), {
        signal: driver.abort.signal,
      });
      return (await fix.done).outcome === "waiting" ? "retry" : "stop";
    }
    const error = `gate \`${command}\` ${describeResult(outcome, gate.expect_exit)} after ${attempts + 1} attempt${attempts === 0 ? "" : "s"}`;
    await this.persist(live, expected, (a) => {
      a.triggerState = "failed";
      a.gateAttempts = attempts;
      a.error = error;
    });
    this.state.log.event("trigger_failed", { projectRoot: live.projectRoot, agentId: live.agentId, error });
    return "stop";
  }

  /** One transition under the manifest lock, only if the binding is still the one this step read. */
  private async persist(live: LiveAgent, expected: Expected, change: (agent: AgentEntry) => void): Promise<void> {
    await this.state.updateManifest(live.projectRoot, (m) => {
      const agent = findAgent(m, live.agentId)?.agent;
      if (!agent || agent.triggerName !== expected.triggerName || (agent.triggerSeqIndex ?? 0) !== expected.seqIndex) {
        throw new BindingChanged();
      }
      change(agent);
    });
  }
}

function describeResult(outcome: GateOutcome, expectExit: number): string {
  if (outcome.timedOut) return "timed out";
  if (outcome.exitCode === null) return "could not run";
  return `exited ${outcome.exitCode} (expected ${expectExit})`;
}

/** What is typed into the agent when its gate fails and it has a retry left. */
function fixRequest(outcome: GateOutcome, expectExit: number, attempt: number, maxRetries: number): string {
  const bytes = Buffer.from(outcome.output.trimEnd());
  const tail = bytes.subarray(Math.max(0, bytes.length - FIX_REQUEST_OUTPUT_BYTES)).toString("utf8");
  return [
    `The check \`${outcome.command}\` ${describeResult(outcome, expectExit)} (fix request ${attempt} of ${maxRetries}).`,
    tail ? `Its output ends with:\n${tail}` : "It printed nothing.",
    "Please fix the cause; the check runs again when you are done.",
  ].join("\n");
}
