// Runs bound triggers: each time an agent becomes waiting, its next action runs (gate,
// then inject). Driven by events only: the status watch's "agent_status" changes, and,
// after pu typed something itself, the agent's own output (a fast agent can answer
// and show its prompt again before the status watch ever sees it streaming).
//
// The manifest is the state: every transition is written (under the manifest lock)
// before the runner moves on, so `pu status` shows it and a restarted daemon continues
// where the last one stopped. A binding whose state is `gating` when no gate of this
// daemon is running (the previous daemon died mid-gate) re-runs that gate.
import { loadDefinition, renderTemplate, type TriggerAction, type TriggerDefinition } from "@pu/core/definitions";
import { renderShellCommand } from "@pu/core/template";
import { triggerTrustItem } from "@pu/core/trust";
import { isPuError } from "@pu/core/errors";
import { findAgent, type AgentEntry } from "@pu/core/manifest";
import { deliverPrompt } from "./agent-launch.js";
import { definitionScopes, triggerVarsOf } from "./definitions-service.js";
import { appendGateRun, runGate, toGateRun, type GateOutcome } from "./gate-runner.js";
import type { AgentStatusChange, EngineState, LiveAgent } from "./state.js";
import { sessionStatus } from "./status-watch.js";

/** How much gate output a fix request quotes. */
const FIX_REQUEST_OUTPUT_BYTES = 4 * 1024;
/** After pu typed into an agent, its output must be quiet this long before "is it waiting?" is asked. */
const REPLY_SETTLE_MS = 150;

interface AgentRun {
  live: LiveAgent;
  /** A step (or the initial prompt delivery) is in progress: further waiting signals are ignored. */
  busy: boolean;
  /** The initial prompt is still being typed: waiting means nothing yet. */
  held: boolean;
  /** A waiting signal arrived while busy: look again once the step is done. */
  kickedWhileBusy: boolean;
  watchingOutput: boolean;
  /** Ring offset right after pu last typed; a waiting signal needs output past it. */
  typedUpTo?: number;
  gate?: AbortController;
  settleTimer?: NodeJS.Timeout;
  unsubscribe: (() => void)[];
}

/** The binding moved on (reassigned, or the agent is gone) while a step ran. */
class BindingChanged extends Error {}

interface Expected {
  triggerName: string;
  seqIndex: number;
}

export class TriggerRunner {
  private readonly runs = new Map<string, AgentRun>();
  private stopped = false;
  private readonly onStatus = (change: AgentStatusChange): void => {
    if (change.to === "waiting") this.kick(change.agentId);
  };

  constructor(private readonly state: EngineState) {}

  start(): void {
    this.state.events.on("agent_status", this.onStatus);
  }

  stop(): void {
    this.stopped = true;
    this.state.events.off("agent_status", this.onStatus);
    for (const agentId of [...this.runs.keys()]) this.forget(agentId);
  }

  /**
   * The agent's initial prompt is being typed: it is not waiting for a trigger
   * action until that is done and it has answered.
   */
  holdWhile(agentId: string, delivery: Promise<unknown>): void {
    const run = this.runFor(agentId);
    if (!run) return;
    // Called right after the entry is written, before any step resumes (see step()).
    run.held = true;
    void delivery.finally(() => {
      if (this.runs.get(agentId) !== run) return;
      run.held = false;
      // Waiting before the prompt went in says nothing; the answer to the prompt will.
      this.expectReply(run);
    });
  }

  /** Asks: is this agent waiting with a trigger action due? Safe to call any time, any number of times. */
  kick(agentId: string): void {
    if (this.stopped) return;
    const run = this.runFor(agentId);
    if (!run || run.held) return;
    if (run.busy) {
      run.kickedWhileBusy = true;
      return;
    }
    if (run.live.session.exitCode !== null || sessionStatus(run.live) !== "waiting") return;
    if (run.typedUpTo !== undefined && run.live.session.ring.endOffset <= run.typedUpTo) return;
    run.busy = true;
    run.kickedWhileBusy = false;
    void this.step(run)
      .catch((err: unknown) => {
        if (!(err instanceof BindingChanged)) {
          this.state.log.event("trigger_step_failed", { projectRoot: run.live.projectRoot, agentId, error: err });
        }
      })
      .finally(() => {
        run.busy = false;
        if (run.kickedWhileBusy) {
          run.kickedWhileBusy = false;
          this.kick(agentId);
        }
      });
  }

  private runFor(agentId: string): AgentRun | undefined {
    const live = this.state.sessions.get(agentId);
    if (!live || live.session.exitCode !== null) return undefined;
    const existing = this.runs.get(agentId);
    if (existing && existing.live === live) return existing;
    if (existing) this.forget(agentId);
    const run: AgentRun = { live, busy: false, held: false, kickedWhileBusy: false, watchingOutput: false, unsubscribe: [] };
    // Mid-gate exit: the gate is stopped and the state stays as persisted.
    run.unsubscribe.push(live.session.onExit(() => this.forget(agentId)));
    this.runs.set(agentId, run);
    return run;
  }

  private forget(agentId: string): void {
    const run = this.runs.get(agentId);
    if (!run) return;
    this.runs.delete(agentId);
    run.gate?.abort();
    clearTimeout(run.settleTimer);
    for (const off of run.unsubscribe) off();
  }

  /** After typing: watch the agent's output, and once it settles, ask whether it is waiting again. */
  private expectReply(run: AgentRun): void {
    run.typedUpTo = run.live.session.ring.endOffset;
    if (run.watchingOutput) return;
    run.watchingOutput = true;
    run.unsubscribe.push(
      run.live.session.onOutput(() => {
        clearTimeout(run.settleTimer);
        run.settleTimer = setTimeout(() => this.kick(run.live.agentId), REPLY_SETTLE_MS);
      }),
    );
  }

  /** Runs due actions until one types into the agent (then the agent's answer drives the next step). */
  private async step(run: AgentRun): Promise<void> {
    const { live } = run;
    await live.entryWritten;
    // spawn calls holdWhile synchronously after writing the entry, so this sees it.
    if (run.held) return;
    for (;;) {
      if (this.stopped || live.session.exitCode !== null) return;
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
        const passed = await this.runActionGate(run, trigger, action, expected, vars, agent.gateAttempts ?? 0);
        if (!passed) return;
      }
      const last = expected.seqIndex + 1 >= trigger.sequence.length;
      if (action.inject !== undefined) {
        const text = renderTemplate(action.inject, vars).text;
        const typed = await deliverPrompt(live.session, text);
        if (!typed) return; // exited while we waited to type
        this.expectReply(run);
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
      // A gate-only action typed nothing, so no new waiting will come: go on to the next one now.
      if (last || action.inject !== undefined) return;
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

  /** Runs the action's gate; true when it passed. On failure: a fix request (retry left) or `failed`. */
  private async runActionGate(
    run: AgentRun,
    trigger: TriggerDefinition,
    action: TriggerAction,
    expected: Expected,
    vars: Record<string, string>,
    attempts: number,
  ): Promise<boolean> {
    const { live } = run;
    const gate = action.gate;
    if (!gate) return true;
    await this.persist(live, expected, (a) => {
      a.triggerState = "gating";
    });
    const { command, env: varEnv } = renderShellCommand(gate.run, vars);
    const abort = new AbortController();
    run.gate = abort;
    let outcome: GateOutcome;
    try {
      outcome = await runGate({
        command,
        cwd: live.cwd,
        timeoutSeconds: gate.timeout_seconds,
        signal: abort.signal,
        env: {
          ...varEnv,
          PU_AGENT_ID: live.agentId,
          PU_PROJECT_ROOT: live.projectRoot,
          PU_TRIGGER: trigger.name,
          PU_GATE_ATTEMPT: String(attempts + 1),
        },
      });
    } finally {
      if (run.gate === abort) run.gate = undefined;
    }
    if (outcome.aborted) return false; // the agent exited: leave the state as persisted
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
    if (passed) return true;

    if (attempts < action.max_retries) {
      await this.persist(live, expected, (a) => {
        a.gateAttempts = attempts + 1;
        a.triggerState = "active";
      });
      const typed = await deliverPrompt(live.session, fixRequest(outcome, gate.expect_exit, attempts + 1, action.max_retries));
      if (typed) this.expectReply(run);
      return false;
    }
    const error = `gate \`${command}\` ${describeResult(outcome, gate.expect_exit)} after ${attempts + 1} attempt${attempts === 0 ? "" : "s"}`;
    await this.persist(live, expected, (a) => {
      a.triggerState = "failed";
      a.gateAttempts = attempts;
      a.error = error;
    });
    this.state.log.event("trigger_failed", { projectRoot: live.projectRoot, agentId: live.agentId, error });
    return false;
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
export function fixRequest(outcome: GateOutcome, expectExit: number, attempt: number, maxRetries: number): string {
  const bytes = Buffer.from(outcome.output.trimEnd());
  const tail = bytes.subarray(Math.max(0, bytes.length - FIX_REQUEST_OUTPUT_BYTES)).toString("utf8");
  return [
    `The check \`${outcome.command}\` ${describeResult(outcome, expectExit)} (fix request ${attempt} of ${maxRetries}).`,
    tail ? `Its output ends with:\n${tail}` : "It printed nothing.",
    "Please fix the cause; the check runs again when you are done.",
  ].join("\n");
}
