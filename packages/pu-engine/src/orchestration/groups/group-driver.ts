/**
 * One multi-agent group from its pending launches to its end. Every member waits in line for
 * a slot (LaunchSlots.request), runs in its own worktree, and is followed turn by turn until it
 * is done (waiting after its turn, its gate passing) or failed (an exit, a gate out of retries,
 * its time limit). Each result lands in state.json as it comes, so a restarted daemon picks up
 * where this one stopped: pending launches line up again, members that were running start
 * again in their worktrees, a join that fired aggregates again.
 */
import { LOCAL_PLACE } from "@pu/core/hosts-file";
import { gateWinner, isGroupFinished, joinReady, memberState, variantKeys, type DiffStat, type GroupKind, type GroupRecord, type MemberResult } from "@pu/core/group";
import { firstTurnOf, launchAgent, type LaunchedAgent } from "../../agents/launcher.js";
import type { LiveAgent } from "../../session/live-agent.js";
import { stopAgents, markFinished, retireReplaced } from "../../agents/stop.js";
import { awaitAnswer, turn, withTurnTimeLimit, type TurnResult } from "../../agents/turn.js";
import { nowIso, type EngineState } from "../../state.js";
import { appendGateRun, gateFixRequest, runGate, toGateRun } from "../../gates/gates.js";
import { hostMemberResult, type HostMembers } from "../../hosts/host-members.js";
import type { LaunchSlots } from "../launch-slots.js";
import type { OperatorStateStore } from "../queue/state-store.js";
import { commitAndDiffStat, memberOutput, memberPatch } from "./group-member-work.js";
import { judgeGroup, STOP_GRACE_MS } from "./group-judge.js";
import { memberLaunch } from "./group-member-launch.js";

/** What of a failed gate's output a fix turn is shown. */
const FIX_OUTPUT_CHARS = 2000;

/** A group's budget, counted over its members (the usage service answers). */
export interface GroupBudgets {
  /** Why the group may start no further member ("max $1, spent $1.02"), or undefined. */
  ownerOver(root: string, owner: { kind: "group"; id: string }, limit: { maxCost?: number | null; maxTokens?: number | null }): Promise<string | undefined>;
  /** Its members' turns interrupted, as a person would, once the group's budget is spent. */
  limitOwner(root: string, owner: { kind: "group"; id: string }, agentId: string, limit: { maxCost?: number | null; maxTokens?: number | null }): void;
}

export interface GroupDriverContext {
  state: EngineState;
  store: OperatorStateStore;
  slots: LaunchSlots;
  budgets: GroupBudgets;
  /** Members placed on hosts (absent: every member runs here). */
  hostMembers?: HostMembers;
}

/** How a member ended, before its output, time and diff are added. */
type MemberOutcome = Pick<MemberResult, "state"> & Partial<Pick<MemberResult, "reason" | "exit_code" | "gate">>;

export class GroupDriver {
  private readonly abort = new AbortController();
  private readonly requests = new Map<string, { cancel(): void }>();
  private readonly lives = new Map<string, LiveAgent>();
  /** Members being stopped on purpose (join: first, cancel): their exits are not failures. */
  private readonly stopping = new Set<string>();
  private joining: Promise<void> | undefined;
  private cancelling = false;
  /** Members whose result is being recorded (two endings may race: done and cancelled). */
  private readonly recording = new Set<string>();
  private judge: LiveAgent | undefined;
  private resolveEnd!: (group: GroupRecord) => void;
  /** Settles when the group reaches complete, failed or cancelled. */
  readonly ended = new Promise<GroupRecord>((resolve) => {
    this.resolveEnd = resolve;
  });

  constructor(
    private readonly ctx: GroupDriverContext,
    readonly group: GroupRecord,
  ) {}

  private get root(): string {
    return this.group.project;
  }

  private get id(): string {
    return this.group.group_id;
  }

  /** The group's line in the slot ledger. */
  private get owner(): string {
    return `group:${this.id}`;
  }

  /** The daemon stops, or the group is being cancelled: nothing more is started or judged. */
  private get shuttingDown(): boolean {
    return this.abort.signal.aborted || this.ctx.state.stopping || this.cancelling;
  }

  private emit(kind: "created" | "member_launched" | "member_finished" | "phase", extra: { variant?: string; agentId?: string } = {}): void {
    this.ctx.state.events.emit("group_changed", { projectRoot: this.root, groupId: this.id, phase: this.group.phase, kind, ...extra });
  }

  private update<T>(change: (group: GroupRecord) => T): Promise<T> {
    return this.ctx.store.update(() => change(this.group));
  }

  /** Lines up what is still to do: pending and interrupted members, or the join. */
  run(): void {
    if (isGroupFinished(this.group)) {
      this.resolveEnd(this.group);
      return;
    }
    if (this.group.phase === "aggregating" || joinReady(this.group)) {
      void this.join();
      return;
    }
    for (const variant of variantKeys(this.group)) {
      const state = memberState(this.group, variant);
      const host = this.group.members[variant]?.host;
      // Placed on a host before: followed there (its group there asked for again if the answer was lost), never placed twice.
      if (host && (state === "running" || state === "pending")) void this.followOnHost(variant, this.ctx.slots.takeAt(this.root, this.owner, host));
      else if (state === "pending") this.lineUp(variant);
      else if (state === "running") {
        const agentId = this.group.members[variant]?.agent_id ?? "";
        const live = this.ctx.state.sessions.get(agentId);
        // Still running (the group was only picked up again): follow it; else start it again in its worktree.
        if (live && live.session.exitCode === null) void this.followRecovered(variant, live);
        else this.lineUp(variant, [LOCAL_PLACE]);
      }
    }
  }

  /** The daemon stops: nothing more is started or recorded; state.json keeps where the group was. */
  stop(): void {
    this.abort.abort();
    for (const request of this.requests.values()) request.cancel();
    this.requests.clear();
  }

  // ---- launching ---------------------------------------------------------------------

  /** `places`: a member started here before starts again here, in its worktree. */
  private lineUp(variant: string, places: readonly string[] = this.group.settings.hosts ?? [LOCAL_PLACE]): void {
    if (this.requests.has(variant)) return;
    const request = this.ctx.slots.requestPlace(this.root, this.owner, places);
    this.requests.set(variant, request);
    void request.granted.then(({ release, place }) => {
      this.requests.delete(variant);
      if (place === LOCAL_PLACE) void this.launchMember(variant, release);
      else void this.launchOnHost(variant, place, release);
    });
  }

  /** The group's budget (`--max-cost` / `--max-tokens`), or undefined when it has none. */
  private budget(): { maxCost: number | null | undefined; maxTokens: number | null | undefined } | undefined {
    const { max_cost: maxCost, max_tokens: maxTokens } = this.group.settings;
    return maxCost != null || maxTokens != null ? { maxCost, maxTokens } : undefined;
  }

  /** Why the group's budget lets no member go on (`max 1000 tokens, spent 1200 tokens`); undefined while under it or without one. */
  private async budgetSpent(): Promise<string | undefined> {
    const budget = this.budget();
    return budget ? this.ctx.budgets.ownerOver(this.root, { kind: "group", id: this.id }, budget) : undefined;
  }

  /** Whether the member may start now; else its slot goes back (and a spent budget records it cancelled). */
  private async mayStart(variant: string, release: () => void, restarted: boolean): Promise<boolean> {
    if (!this.group.members[variant] || this.shuttingDown || this.stopping.has(variant) || this.group.individual_outputs?.[variant] || isGroupFinished(this.group)) {
      release();
      return false;
    }
    // A spent budget starts no further member; the join goes on with the ones that ran.
    const spent = await this.budgetSpent();
    if (spent !== undefined && !restarted) {
      release();
      await this.recordResult(variant, { state: "cancelled", reason: `not started: the group's budget is spent (${spent})`, output: "", output_source: "none" });
      return false;
    }
    return true;
  }

  /** The member's agent as launched (here, or as its host reported it): recorded in state.json. */
  private async recordAgent(variant: string, agent: { agentId: string; worktreeId?: string | null; worktreePath?: string | null; branch?: string | null }, started: boolean): Promise<void> {
    const member = this.group.members[variant];
    if (!member) return;
    await this.update((g) => {
      const oldId = member.agent_id;
      member.agent_id = agent.agentId;
      member.worktree_id = agent.worktreeId ?? member.worktree_id ?? null;
      member.worktree_path = agent.worktreePath ?? member.worktree_path ?? null;
      member.branch = agent.branch ?? member.branch ?? null;
      if (started) {
        member.started_at = nowIso();
        member.attempts = 1;
      }
      g.agent_ids = [...g.agent_ids.filter((id) => id !== oldId), agent.agentId];
      const keys = { ...g.agent_variant_keys };
      if (oldId) delete keys[oldId];
      keys[agent.agentId] = variant;
      g.agent_variant_keys = keys;
      g.pending_launches = (g.pending_launches ?? []).filter((p) => p.variant_key !== variant);
      if (g.pending_launches.length === 0 && g.phase === "launching") g.phase = "running";
    });
    this.emit("member_launched", { variant, agentId: agent.agentId });
  }

  private async launchMember(variant: string, release: () => void): Promise<void> {
    const previous = this.group.members[variant]?.agent_id ?? null;
    const restarted = previous != null;
    if (!(await this.mayStart(variant, release, restarted))) return;
    const { request, model } = memberLaunch(this.group, variant, restarted);
    let launched: LaunchedAgent;
    try {
      launched = await launchAgent(this.ctx.state, request);
    } catch (err) {
      release();
      if (this.shuttingDown) return;
      await this.recordResult(variant, { state: "failed", reason: `could not start: ${(err as Error).message}`, output: "", output_source: "none" });
      return;
    }
    if (model !== undefined) launched.live.model = model;
    const budget = this.budget();
    if (budget) this.ctx.budgets.limitOwner(this.root, { kind: "group", id: this.id }, launched.agentId, budget);
    this.lives.set(variant, launched.live);
    await this.recordAgent(variant, { agentId: launched.agentId, worktreeId: launched.worktreeId, worktreePath: launched.worktreePath ?? launched.cwd, branch: launched.branch }, true);
    // The member's agent before the daemon stopped was benched with the rest: this one replaces it.
    if (previous !== null) await retireReplaced(this.ctx.state, this.root, ({ agent }) => agent.id === previous, launched.agentId, "group");
    this.ctx.state.log.event("group_member_launched", { projectRoot: this.root, groupId: this.id, variant, agentId: launched.agentId, restarted });
    void this.follow(variant, launched.live, (limit) => withTurnTimeLimit(firstTurnOf(this.ctx.state, launched, this.abort.signal), limit), release);
  }

  // ---- a member on a host ------------------------------------------------------------------

  private async launchOnHost(variant: string, host: string, release: () => void): Promise<void> {
    if (!(await this.mayStart(variant, release, false))) return;
    await this.update(() => {
      const member = this.group.members[variant]!;
      member.host = host;
      member.started_at = nowIso();
      member.attempts = 1;
    });
    await this.followOnHost(variant, release);
  }

  /**
   * The member runs on its host as a group of one there (host-members.ts): made once (asked again
   * after a restart, the host answers with the same group), then looked at until it ends. While the
   * host is unreachable the member goes on there; it is asked again, less often, until it answers.
   */
  private async followOnHost(variant: string, release: () => void): Promise<void> {
    const member = this.group.members[variant]!;
    const host = member.host ?? "";
    const base = this.group.settings.base_branch ?? "";
    try {
      const hosts = this.ctx.hostMembers;
      if (!hosts) throw new Error("this daemon places no members on hosts");
      if (!member.host_group_id) {
        const spec = { groupId: this.id, variant, kind: this.group.step_type as GroupKind, delegator: member.delegator_name, prompt: member.prompt, baseBranch: base, settings: this.group.settings };
        const hostGroupId = await hosts.start(this.root, host, spec, this.abort.signal);
        await this.update((g) => {
          member.host_group_id = hostGroupId;
          g.pending_launches = (g.pending_launches ?? []).filter((p) => p.variant_key !== variant);
          if (g.pending_launches.length === 0 && g.phase === "launching") g.phase = "running";
        });
        this.ctx.state.log.event("group_member_launched", { projectRoot: this.root, groupId: this.id, variant, host, hostGroupId });
        this.emit("member_launched", { variant });
      }
      const stopped = () => this.shuttingDown || this.stopping.has(variant);
      const view = await hosts.follow(this.root, host, member.host_group_id ?? "", base, {
        signal: this.abort.signal,
        over: stopped,
        seen: async (seen) => {
          if (seen.agentId && seen.agentId !== member.agent_id) await this.recordAgent(variant, { agentId: seen.agentId, worktreeId: seen.worktreeId, worktreePath: seen.worktreePath, branch: seen.branch }, false);
        },
        // The host holds the member to the whole budget on its own figures; spent with the others', it is held here.
        ...(this.budget() ? { spent: () => this.budgetSpent(), owner: `group:${this.id}` } : {}),
      });
      if (!view || stopped()) return;
      const { diff, ...result } = hostMemberResult(view);
      await this.recordResult(variant, result, diff);
    } catch (err) {
      if (this.shuttingDown) return;
      await this.recordResult(variant, { state: "failed", reason: `could not run on host ${host}: ${(err as Error).message}`, output: "", output_source: "none" }).catch(() => undefined);
    } finally {
      release();
    }
  }

  /** A member found running when the group was picked up: it takes a slot again and is followed. */
  private async followRecovered(variant: string, live: LiveAgent): Promise<void> {
    const release = this.ctx.slots.take(this.root);
    this.lives.set(variant, live);
    await this.follow(variant, live, (limit) => withTurnTimeLimit(awaitAnswer(this.ctx.state, live, 0, { signal: this.abort.signal }), limit), release);
  }

  // ---- following a member ------------------------------------------------------------------

  /** Milliseconds the member has left under timeout_minutes (undefined: no limit). */
  private timeLeft(variant: string): number | undefined {
    const minutes = this.group.settings.timeout_minutes;
    if (minutes == null) return undefined;
    const started = Date.parse(this.group.members[variant]?.started_at ?? "") || Date.now();
    return Math.max(1, started + minutes * 60_000 - Date.now());
  }

  private async follow(variant: string, live: LiveAgent, first: (limitMs: number | undefined) => Promise<TurnResult>, release: () => void): Promise<void> {
    let outcome: MemberOutcome = { state: "failed" };
    try {
      let result = await first(this.timeLeft(variant));
      const settings = this.group.settings;
      for (let attempt = 1; ; attempt++) {
        if (this.shuttingDown || this.stopping.has(variant)) return;
        if (result.outcome === "timed_out") {
          outcome = { state: "failed", reason: `still working after timeout_minutes (${settings.timeout_minutes} min); stopped` };
          break;
        }
        const answered = result.outcome === "waiting" || (result.outcome === "exited" && result.exitCode === 0);
        if (!answered) {
          outcome = { state: "failed", reason: `the agent exited (code ${result.exitCode ?? "?"}) before its work was done`, exit_code: result.exitCode ?? null };
          break;
        }
        if (!settings.gate) {
          outcome = { state: "done", ...(result.outcome === "exited" ? { exit_code: 0 } : {}) };
          break;
        }
        const gate = await runGate({
          command: settings.gate.run,
          cwd: live.cwd,
          timeoutSeconds: settings.gate.timeout_seconds,
          signal: this.abort.signal,
          env: { ...this.group.settings.placed_by?.env, PU_AGENT_ID: live.agentId, PU_PROJECT_ROOT: this.root, PU_GROUP_ID: this.id, PU_VARIANT_KEY: variant, PU_GATE_ATTEMPT: String(attempt) },
        });
        if (this.shuttingDown || this.stopping.has(variant)) return;
        const record = toGateRun(gate, { agentId: live.agentId, triggerName: `group:${this.id}:${variant}`, seqIndex: 0, expectedExit: settings.gate.expect_exit });
        await appendGateRun(this.root, live.agentId, record).catch((err: unknown) => this.ctx.state.log.event("gate_record_failed", { error: err }));
        const gateResult = { passed: record.passed, exit_code: gate.exitCode, attempts: attempt };
        if (record.passed) {
          outcome = { state: "done", gate: gateResult };
          break;
        }
        if (attempt > settings.max_retries || result.outcome === "exited") {
          outcome = { state: "failed", reason: `the gate \`${settings.gate.run}\` failed ${attempt} time(s) (exit ${gate.exitCode ?? "timeout"})`, gate: gateResult };
          break;
        }
        await this.update(() => {
          const member = this.group.members[variant];
          if (member) member.attempts = attempt + 1;
        });
        const fix = gateFixRequest(gate, settings.gate.expect_exit, attempt, settings.max_retries + 1, FIX_OUTPUT_CHARS);
        const limit = this.timeLeft(variant);
        result = await withTurnTimeLimit(turn(this.ctx.state, live, fix, { signal: this.abort.signal }), limit);
      }
      if (this.shuttingDown || this.stopping.has(variant)) return;
      await this.finishMember(variant, live, outcome);
    } catch (err) {
      if (this.shuttingDown) return;
      await this.finishMember(variant, live, { state: "failed", reason: `pu could not follow the member: ${(err as Error).message}` }).catch(() => undefined);
    } finally {
      this.lives.delete(variant);
      if (!this.shuttingDown && live.session.exitCode === null) await stopAgents([live], "kill", STOP_GRACE_MS).catch(() => undefined);
      release();
    }
  }

  /** Output, commit, diff stat; then the agent is stopped (its worktree stays) and the result recorded. */
  private async finishMember(variant: string, live: LiveAgent | undefined, outcome: MemberOutcome): Promise<void> {
    const output = await memberOutput(this.group, variant, live);
    if (live && live.session.exitCode === null) {
      if (outcome.state === "done") markFinished(live, "group");
      await stopAgents([live], "kill", STOP_GRACE_MS).catch(() => undefined);
    }
    await this.recordResult(variant, { ...outcome, ...output });
  }

  /** `hostDiff`: a member on a host had its work committed and counted there. */
  private async recordResult(variant: string, result: MemberOutcome & Pick<MemberResult, "output" | "output_source">, hostDiff?: DiffStat | null): Promise<void> {
    if (this.group.individual_outputs?.[variant] || this.recording.has(variant)) return;
    this.recording.add(variant);
    const diff = this.group.members[variant]?.host ? (hostDiff ?? null) : await commitAndDiffStat(this.group, variant, this.ctx.state.log);
    const started = Date.parse(this.group.members[variant]?.started_at ?? "");
    const full: MemberResult = {
      ...result,
      seconds: Number.isNaN(started) ? 0 : Math.round((Date.now() - started) / 100) / 10,
      finished_at: nowIso(),
      diff,
    };
    await this.update((g) => {
      g.individual_outputs = { ...g.individual_outputs, [variant]: full };
      g.pending_launches = (g.pending_launches ?? []).filter((p) => p.variant_key !== variant);
      if (g.pending_launches.length === 0 && g.phase === "launching") g.phase = "running";
    });
    this.ctx.state.log.event("group_member_finished", { projectRoot: this.root, groupId: this.id, variant, state: full.state, reason: full.reason });
    this.emit("member_finished", { variant, ...(this.group.members[variant]?.agent_id ? { agentId: this.group.members[variant]?.agent_id ?? "" } : {}) });
    if (joinReady(this.group) && !this.shuttingDown) void this.join();
  }

  // ---- the join and the end ----------------------------------------------------------------------

  private join(): Promise<void> {
    this.joining ??= this.runJoin().catch(async (err: unknown) => {
      if (this.shuttingDown) return;
      this.ctx.state.log.event("group_join_failed", { projectRoot: this.root, groupId: this.id, error: err });
      await this.end("failed", [`pu could not finish the group: ${(err as Error).message}`]).catch(() => undefined);
    });
    return this.joining;
  }

  private async runJoin(): Promise<void> {
    if (this.shuttingDown) return;
    if (this.group.settings.join === "first") await this.cancelMembers("another member finished first (join: first)");
    if (this.shuttingDown) return;
    const results = this.group.individual_outputs ?? {};
    const done = Object.keys(results).filter((v) => results[v]?.state === "done");
    const quorum = this.group.settings.quorum;
    if (done.length < quorum) {
      const reasons = Object.entries(results)
        .filter(([, r]) => r.state === "failed")
        .map(([v, r]) => `${v}: ${r.reason ?? "failed"}`);
      return this.end("failed", [`${done.length} of ${variantKeys(this.group).length} members done; the quorum is ${quorum}`, ...reasons]);
    }
    if (this.group.phase !== "aggregating") {
      await this.update((g) => {
        g.phase = "aggregating";
      });
      this.emit("phase");
    }
    const outputs = Object.fromEntries(done.map((v) => [v, results[v]?.output ?? ""]));
    switch (this.group.settings.aggregate) {
      case "collect":
        return this.end("complete", [], { aggregate: "collect", outputs, winner: null });
      case "gate": {
        const winner = gateWinner(this.group);
        if (!winner) return this.end("failed", ["no member passed the gate"]);
        return this.end("complete", [], { aggregate: "gate", outputs, winner });
      }
      case "judge":
        return this.runJudge(done, outputs);
    }
  }

  /** Stops every member not finished yet and records it cancelled (pending ones never start). */
  private async cancelMembers(reason: string): Promise<void> {
    const open = variantKeys(this.group).filter((v) => !this.group.individual_outputs?.[v]);
    for (const v of open) {
      this.stopping.add(v);
      this.requests.get(v)?.cancel();
      this.requests.delete(v);
    }
    await Promise.all(
      open.map(async (v) => {
        const member = this.group.members[v];
        if (member?.host && member.host_group_id) {
          await this.ctx.hostMembers?.cancel(this.root, member.host, member.host_group_id).catch((error: unknown) => this.ctx.state.log.event("group_host_cancel_failed", { projectRoot: this.root, groupId: this.id, variant: v, host: member.host, error }));
        }
        await this.finishMember(v, this.lives.get(v), { state: "cancelled", reason });
      }),
    );
  }

  private async end(phase: "complete" | "failed" | "cancelled", reasons: string[], aggregated?: Record<string, unknown>): Promise<void> {
    if (isGroupFinished(this.group)) return;
    await this.update((g) => {
      g.phase = phase;
      g.finished_at = nowIso();
      if (reasons.length > 0) g.failure_reasons = reasons;
      if (aggregated) g.aggregated_output = aggregated;
    });
    this.ctx.state.log.event("group_finished", { projectRoot: this.root, groupId: this.id, phase, reasons });
    this.emit("phase");
    this.resolveEnd(this.group);
  }

  /** `pu group cancel`: every member stops and is recorded cancelled; the judge too. */
  async cancel(): Promise<void> {
    if (isGroupFinished(this.group)) return;
    const judge = this.judge;
    this.cancelling = true;
    for (const request of this.requests.values()) request.cancel();
    this.requests.clear();
    await this.cancelMembers("the group was cancelled");
    if (judge && judge.session.exitCode === null) await stopAgents([judge], "kill", STOP_GRACE_MS).catch(() => undefined);
    await this.end("cancelled", ["cancelled by request"]);
  }

  // ---- the judge -----------------------------------------------------------------------------

  private async runJudge(done: string[], outputs: Record<string, string>): Promise<void> {
    const outcome = await judgeGroup(
      {
        state: this.ctx.state,
        slots: this.ctx.slots,
        signal: this.abort.signal,
        group: this.group,
        over: () => this.shuttingDown || isGroupFinished(this.group),
        waiting: (request) => (request ? this.requests.set("(judge)", request) : this.requests.delete("(judge)")),
        running: (live) => {
          this.judge = live;
        },
        record: (change) => this.update(change),
        patchOf: (variant) => memberPatch(this.group, variant, this.ctx.hostMembers),
      },
      done,
      outputs,
    );
    if (outcome?.phase === "complete") await this.end("complete", [], outcome.aggregated);
    else if (outcome) await this.end("failed", [outcome.reason]);
  }
}
