/**
 * A ticket placed on a host (`queue.hosts` in the project's config). Each of its agent steps runs
 * there as a group of one member of the host's daemon (host-members.ts): the first makes the
 * ticket's worktree on the host from the project's branch, the later ones run in it; the step's
 * gate (and artifact) with its fix turns, its budget and pu's commit are the host's. This daemon
 * types nothing itself: it records the step's group before asking (so a restarted daemon finds it
 * again and no step runs twice), follows it, writes its output here, and decides what comes next —
 * a review, a person's decision, the next step — as for a ticket on this machine. At the end the
 * ticket's branch is fetched back and merged here.
 */
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { loadConfig, type BudgetLimit } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { lowerLimit } from "@pu/core/usage";
import { remoteCommandLine } from "@pu/core/remote-argv";
import { renderTemplate } from "@pu/core/template";
import { stepAgent, type WorkflowStep } from "@pu/core/workflow";
import { hostMemberResult, type HostMemberSpec, type HostMembers } from "../../hosts/host-members.js";
import { limitOf, overBy } from "../../usage/usage-figures.js";
import { currentBranch } from "../../git/runner.js";
import { findTicket } from "./tickets.js";
import { NEEDS_DECISION, REVIEW_STATES, type StepOutcome, type TicketRun } from "./queue-run.js";
import { QueueSteps, type StepWatch } from "./queue-steps.js";

/** How often the screen of a step's agent on a host is looked at: a quarter of hungAfterMinutes, within these. */
const HOST_SCREEN_LOOK_MIN_MS = 500;
const HOST_SCREEN_LOOK_MAX_MS = 60_000;
/** The exit a combined gate uses for a missing artifact (another, when the step's gate expects this one). */
const MISSING_ARTIFACT_EXIT = 97;

export abstract class QueueHostSteps extends QueueSteps {
  /** One agent step of a ticket on a host: asked there once (by its key), followed, its result decided here. */
  protected async runHostStep(run: TicketRun, step: WorkflowStep, extra: string | undefined): Promise<StepOutcome> {
    const agentState = this.agentStateOf(run);
    const host = agentState?.host;
    const hosts = this.hostMembers;
    if (!agentState || !host) return { kind: "failed", message: `ticket ${run.ticketId} has no host recorded` };
    if (!hosts) return { kind: "failed", message: `ticket ${run.ticketId} runs on host ${host}, and this daemon places nothing on hosts` };
    const trusted = await this.trustedTicket(run, step);
    if ("outcome" in trusted) return trusted.outcome;
    const ticket = trusted.ticket;
    await this.markStepStarted(run, step, agentState.session_name ?? undefined);
    // The step's group on the host: the one recorded for this step (asked again after a restart), or a new key.
    let placed = agentState.host_step?.step === step.name ? agentState.host_step : null;
    if (!placed) {
      // Its budget there: the lower of its own and what the ticket's earlier steps left; nothing left, a person decides.
      const left = await this.ticketBudgetLeft(run, ticket, undefined);
      if (left.spent) return this.waitForPerson(run, step, null, `${NEEDS_DECISION} step ${step.name}: stopped at its budget (${left.spent})`);
      const key = `${run.ticketId}-${step.name}-${randomBytes(4).toString("hex")}`;
      const fresh = { step: step.name, key, group_id: null, max_cost: lowerLimit(step.max_cost, left.maxCost) ?? null, max_tokens: lowerLimit(step.max_tokens, left.maxTokens) ?? null };
      await this.store.update(() => {
        agentState.host_step = fresh;
      });
      placed = fresh;
    }
    const baseBranch = await currentBranch(run.root);
    if (!baseBranch) return { kind: "failed", message: `${run.root} is on a detached HEAD; a ticket on host ${host} starts from a branch` };
    // A step recorded by a pu before budgets were kept there (neither field) keeps its lower of the step's and the ticket's.
    const recorded = placed.max_cost !== undefined || placed.max_tokens !== undefined;
    const limit = recorded
      ? limitOf({ maxCost: placed.max_cost, maxTokens: placed.max_tokens })
      : limitOf({ maxCost: lowerLimit(step.max_cost, ticket.max_cost), maxTokens: lowerLimit(step.max_tokens, ticket.max_tokens) });
    try {
      if (!placed.group_id) {
        const groupId = await hosts.start(run.root, host, await this.hostStepSpec(run, step, extra, baseBranch, placed.key, limit), run.abort.signal);
        const asked = placed;
        await this.store.update(() => {
          if (agentState.host_step === asked) agentState.host_step = { ...asked, group_id: groupId };
        });
        placed = { ...asked, group_id: groupId };
      }
      const watch = this.watchStep(run, step, ` on host ${host}`);
      const stopScreenWatch = this.watchHostScreen(run, step, { host, hosts }, watch, (await this.slots.projectSettings(run.root)).hungAfterMinutes);
      let view;
      try {
        view = await hosts.follow(run.root, host, placed.group_id ?? "", baseBranch, {
          signal: run.abort.signal,
          over: () => run.abort.signal.aborted || this.stopped || this.state.stopping,
          seen: async (member) => {
            if (!member.agentId || member.agentId === agentState.session_name) return;
            const agentId = member.agentId;
            await this.store.update(() => {
              agentState.session_name = agentId;
              if (!agentState.host_agents?.includes(agentId)) agentState.host_agents = [...(agentState.host_agents ?? []), agentId];
              agentState.session_context_ref = member.worktreeId ?? agentState.session_context_ref;
              agentState.worktree_path = member.worktreePath ?? agentState.worktree_path;
              agentState.last_activity = new Date().toISOString();
            });
          },
        });
      } finally {
        watch.stop();
        stopScreenWatch();
      }
      if (!view || run.abort.signal.aborted || this.stopped || this.state.stopping) return { kind: "stopped" };
      await watch.unflag();
      const result = hostMemberResult(view);
      if (result.output_source === "file" && result.output.trim() !== "") {
        const file = this.outputFile(run.root, run.ticketId);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, `${result.output.trimEnd()}\n`);
      }
      // This step's group is settled: a rejected step, typed again, gets a group of its own.
      await this.store.update(() => {
        agentState.host_step = null;
      });
      // Stopped there at its budget, its turn ends as any other: the figures say so.
      const over = await this.hostStepOver(run.root, { host, hosts }, agentState.session_name, limit);
      if (over) return this.waitForPerson(run, step, null, `${NEEDS_DECISION} step ${step.name}: stopped at its budget (${over})`);
      if (result.state === "done") {
        if (step.review) return this.waitForPerson(run, step, REVIEW_STATES[step.review], `step ${step.name} waits for a ${step.review} review`);
        return { kind: "done", note: `on host ${host}` };
      }
      return this.waitForPerson(run, step, null, `${NEEDS_DECISION} step ${step.name} on host ${host}: ${result.reason ?? `the agent ${result.state}`}`);
    } catch (error) {
      if (run.abort.signal.aborted || this.stopped || this.state.stopping) return { kind: "stopped" };
      return this.waitForPerson(run, step, null, `${NEEDS_DECISION} step ${step.name} could not run on host ${host}: ${(error as Error).message}`);
    }
  }

  /**
   * The hung-screen notice for a step on a host, as for a step here: the step's agent busy
   * (streaming) with the same screen (its content hash, as the host reports it) for
   * hungAfterMinutes flags the ticket once. The time is this machine's, from when this daemon
   * first saw that screen, so the hosts' clocks never matter; a report the host does not give
   * (or one without a screen hash) changes nothing. Returns the stop.
   */
  private watchHostScreen(run: TicketRun, step: WorkflowStep, on: { host: string; hosts: HostMembers }, watch: StepWatch, hungAfterMinutes: number): () => void {
    const hungMs = hungAfterMinutes * 60_000;
    let seen: { agentId: string; screen: string; since: number } | undefined;
    let asking = false;
    const look = async (): Promise<void> => {
      const agentId = this.agentStateOf(run)?.session_name;
      if (!agentId) return;
      const view = await on.hosts.agentNow(agentId);
      if (!view) return;
      const now = Date.now();
      const screen = view.status === "streaming" ? view.contentHash : undefined;
      if (screen === undefined || seen?.agentId !== agentId || seen.screen !== screen) {
        seen = screen === undefined ? undefined : { agentId, screen, since: now };
        return;
      }
      if (now - seen.since >= hungMs) watch.flag(`the agent's screen has not changed for ${hungAfterMinutes} min while it is busy (step ${step.name}, on host ${on.host})`);
    };
    const timer = setInterval(() => {
      if (asking) return;
      asking = true;
      void look()
        .catch(() => undefined)
        .finally(() => (asking = false));
    }, Math.min(Math.max(hungMs / 4, HOST_SCREEN_LOOK_MIN_MS), HOST_SCREEN_LOOK_MAX_MS));
    return () => clearInterval(timer);
  }

  /** Why the step's agent on the host passed its budget (`max 450 tokens, spent 550 tokens`), or undefined. */
  private async hostStepOver(root: string, on: { host: string; hosts: HostMembers }, agentId: string | null | undefined, limit: BudgetLimit): Promise<string | undefined> {
    if (!agentId || (limit.maxCost === undefined && limit.maxTokens === undefined)) return undefined;
    const [figures] = await on.hosts.usageOf(root, [{ host: on.host, agentId }]).catch(() => []);
    return overBy(limit, figures);
  }

  /** What the host is asked to run for the step: its prompt, agent, check and budget, in the ticket's worktree there once it has one. */
  private async hostStepSpec(run: TicketRun, step: WorkflowStep, extra: string | undefined, baseBranch: string, key: string, limit: BudgetLimit): Promise<HostMemberSpec> {
    const agentState = this.agentStateOf(run);
    if (!agentState) throw new PuError("INVALID_STATE", `ticket ${run.ticketId} has no state`);
    const ticket = await findTicket(run.root, run.ticketId);
    const config = await loadConfig(run.root);
    const stats = this.store.state.project_llm_stats?.[run.root];
    const tool = stepAgent(step, ticket, stats?.preferred_tool, config.defaultAgent);
    const model = step.model ?? ticket.model ?? agentState.llm_model ?? null;
    // The step's output file is the member's own there; its text comes back and is written here.
    const vars = { ...(await this.stepVars(run, ticket, step)), OUTPUT_FILE: "$PU_OUTPUT_FILE" };
    const prompt = renderTemplate(step.prompt, vars).text.trimEnd();
    return {
      groupId: `ticket-${run.ticketId}`,
      variant: key,
      kind: "multi_model",
      delegator: model !== null && tool !== "terminal" ? `${tool}:${model}` : tool,
      prompt: extra ? `${extra}\n\n${prompt}` : prompt,
      baseBranch,
      env: { PU_TICKET_ID: run.ticketId, PU_STEP: step.name },
      ...(agentState.session_context_ref ? { worktree: agentState.session_context_ref } : {}),
      settings: {
        gate: hostStepGate(step),
        max_retries: step.max_retries,
        timeout_minutes: null,
        max_cost: limit.maxCost ?? null,
        max_tokens: limit.maxTokens ?? null,
      },
    };
  }

  /** A ticket on a host merges its branch, fetched back, into the branch it started from here. */
  protected override async mergeTicketWorktree(run: TicketRun): Promise<string> {
    const agentState = this.agentStateOf(run);
    if (!agentState?.host) return super.mergeTicketWorktree(run);
    const worktreeId = agentState.session_context_ref;
    if (!worktreeId || !this.hostMembers) return "merge failed: the ticket has no worktree";
    try {
      const merged = await this.hostMembers.merge(worktreeId, "merge", `Merge ticket ${run.ticketId} (from host ${agentState.host})`);
      return merged.nothingToMerge ? "nothing to merge" : `merged into ${merged.baseBranch} (from host ${agentState.host})`;
    } catch (error) {
      return `merge failed: ${(error as Error).message}`;
    }
  }

  /** A cancelled ticket's step on its host is cancelled there too (a host that does not answer is logged). */
  protected async cancelHostStep(run: TicketRun): Promise<void> {
    const agentState = this.agentStateOf(run);
    const groupId = agentState?.host_step?.group_id;
    if (!agentState?.host || !groupId || !this.hostMembers) return;
    await this.hostMembers.cancel(run.root, agentState.host, groupId).catch((error: unknown) => this.state.log.event("ticket_host_cancel_failed", { projectRoot: run.root, ticketId: run.ticketId, host: agentState.host, error }));
  }
}

/**
 * The step's check as one command for the host's gate: its artifact must exist in the worktree
 * (the path quoted, never spliced into the script), then its own gate, if any, decides.
 */
function hostStepGate(step: WorkflowStep): { run: string; timeout_seconds: number; expect_exit: number } | null {
  const gate = step.gate;
  if (step.artifact === undefined) return gate ? { run: gate.run, timeout_seconds: gate.timeout_seconds, expect_exit: gate.expect_exit } : null;
  const missing = gate?.expect_exit === MISSING_ARTIFACT_EXIT ? MISSING_ARTIFACT_EXIT + 1 : MISSING_ARTIFACT_EXIT;
  // One shell word each (remoteCommandLine quotes them): the path is never read as shell syntax.
  const check = `${remoteCommandLine(["test", "-f", step.artifact])} || { ${remoteCommandLine(["printf", "The step is done only when %s exists, and it does not yet. Please create it.\\n", step.artifact])}; exit ${missing}; }`;
  return { run: gate ? `${check}\n${gate.run}` : `${check}\nexit 0`, timeout_seconds: gate?.timeout_seconds ?? 600, expect_exit: gate?.expect_exit ?? 0 };
}
