/**
 * Tokens and cost of every agent, read from the agent CLIs' own records (record-sources.ts),
 * kept in the project's `.pu/usage.json` (usage-store.ts), and budgets enforced on them.
 * Reading is a poll (one `stat` per record per second while the agent runs) off the data path:
 * a busy agent's output never waits for it.
 *
 * A budget is crossed when the tokens the provider reported (input, cache read and write,
 * output) or their cost reach the limit; pu then interrupts the turn the way a person would
 * (the CLI's own interrupt key), keeps the agent and its worktree, and refuses `pu send` until
 * the budget is raised (`pu budget`).
 */
import type { BudgetLimit } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { budgetTokens } from "@pu/core/usage";
import type { AgentBudget, AgentUsage, UsageOwner } from "@pu/core/usage-file";
import type { AgentUsageView, StatusReport, UsageFigures, UsageResult, UsageGrouping } from "@pu/ipc/protocol";
import type { DaemonLog } from "../daemon-log.js";
import type { EngineState } from "../state.js";
import { buildEnv } from "../agents/launch-command.js";
import { interruptTurn } from "../agents/turn.js";
import { RecordFinder, type RecordSource, type RecordedAgent } from "./record-sources.js";
import { UsageStore, type ProjectUsage } from "./usage-store.js";
import { addFigures, agentView, dayTotals, decorateReport, describeBudget, describeSpent, emptyTotals, figuresOf, isOver, limitOf, overBy, ownerKey, ownerTotalsIn, rollUp, stepBudget, totalsOf, type OwnerLimit, type Totals } from "./usage-figures.js";

const POLL_MS = 1_000;
/** Looking for a record not found yet (a directory listing, a query): at most this often per agent. */
const DISCOVER_MS = 3_000;
/** Tallies reach usage.json at most this often (and when the daemon stops; a crash is settled by re-reading). */
const PERSIST_MS = 5_000;
/** After an agent exits its CLI may still be writing its last lines. */
const AFTER_EXIT_MS = 3_000;

interface TrackedAgent extends RecordedAgent {
  root: string;
  name: string;
  sources: Map<string, RecordSource>;
  discoveredAt: number;
  exitedAt?: number;
}

/** Who can tell which ticket, group or plan an agent works for (the orchestrators, wired in daemon.ts). */
export type OwnerLookup = (root: string, agentId: string) => UsageOwner | undefined;

/** What an owner's agents on hosts used, as their hosts report it (wired in daemon.ts; none without hosts). */
export type ElsewhereFigures = (root: string, owner: UsageOwner) => Promise<UsageFigures[]>;

export class UsageService {
  private readonly tracked = new Map<string, TrackedAgent>();
  private readonly records = new RecordFinder();
  /** Budgets of groups (and plans), by `root\0kind:id`. */
  private readonly ownerBudgets = new Map<string, { root: string; owner: UsageOwner; limit: BudgetLimit; spentAt?: string }>();
  /** Agents whose new records were read outside the poll (read to the end on request): judged at the next poll all the same. */
  private readonly readOutsidePoll = new Set<string>();
  /** Owners named before the agent's entry existed (its start is announced just after). */
  private readonly pendingOwners = new Map<string, UsageOwner>();
  private readonly unsubscribe: (() => void)[] = [];
  private pollTimer?: NodeJS.Timeout;
  private persistTimer?: NodeJS.Timeout;
  private polling = false;
  private polls = 0;
  private ownerOf: OwnerLookup = () => undefined;
  private elsewhere: ElsewhereFigures = async () => [];
  /** Told when a project's daily budget (`budgets.daily` in config) is spent. */
  private dailySpent: (root: string, message: string) => void = () => undefined;
  /** Told when an agent's figures or budget state change (status streams). */
  private changed: (root: string) => void = () => undefined;

  private readonly store: UsageStore;

  constructor(
    private readonly state: EngineState,
    private readonly log: DaemonLog,
    private readonly pollMs = POLL_MS,
  ) {
    this.store = new UsageStore(log, (project) => void this.settle(project));
  }

  start(): void {
    this.unsubscribe.push(
      this.state.events.on("agent_started", ({ projectRoot, live, entry }) => {
        const env = buildEnv(process.env, { agentId: entry.id, projectRoot, worktreeId: live.worktreeId, extra: entry.env });
        const { id: agentId, name, agentType, sessionId } = entry;
        this.track({ root: projectRoot, agentId, name, agentType, sessionId, cwd: live.cwd, startedAtMs: live.startedAtMs, env, sources: new Map(), discoveredAt: 0 });
      }),
      this.state.events.on("agent_exit", ({ agentId }) => {
        const agent = this.tracked.get(agentId);
        if (agent) agent.exitedAt = Date.now();
      }),
    );
    this.pollTimer = setInterval(() => void this.pollAll(), this.pollMs);
    this.pollTimer.unref();
    this.persistTimer = setInterval(() => void this.store.persistAll(), PERSIST_MS);
    this.persistTimer.unref();
  }

  /** Which ticket, group or plan an agent belongs to (asked while it runs). */
  setOwnerLookup(lookup: OwnerLookup): void {
    this.ownerOf = lookup;
  }

  /** A group's or plan's budget counts its members and workers on hosts too, from what their hosts report. */
  setElsewhere(figures: ElsewhereFigures): void {
    this.elsewhere = figures;
  }

  onChange(listener: (root: string) => void): void {
    this.changed = listener;
  }

  onDailyBudgetSpent(listener: (root: string, message: string) => void): void {
    this.dailySpent = listener;
  }

  async stop(): Promise<void> {
    for (const off of this.unsubscribe) off();
    clearInterval(this.pollTimer);
    clearInterval(this.persistTimer);
    await this.pollAll();
    await this.store.persistAll();
    this.records.close();
  }

  private track(agent: TrackedAgent): void {
    this.tracked.set(agent.agentId, agent);
    void this.store.project(agent.root).then(async (project) => {
      const entry = this.entryOf(project, agent);
      entry.name = agent.name;
      entry.reading = true;
      // A resumed agent may go on writing the records it had (Codex's `resume --last`).
      for (const key of Object.keys(entry.sources)) {
        if (agent.sources.has(key)) continue;
        const source = this.records.fromKey(key);
        if (source) agent.sources.set(key, source);
      }
      // A record known before the CLI writes it (Claude's session file, named by pu) is named at
      // once: its first answer can come before the first poll.
      await this.discover(agent, entry).catch((error: unknown) => this.log.event("usage_read_failed", { agentId: agent.agentId, error }));
      project.dirty = true;
      // Written at once, not with the next batch: a daemon killed during the agent's first turn
      // leaves `reading: true`, and the next one reads the agent's records again from the start.
      return this.store.persist(agent.root);
    });
  }

  /**
   * Agents a dead daemon was still following: their records are read again from the start and
   * their tallies replaced (a tally is always its whole source's, so nothing counts twice).
   */
  private async settle(project: ProjectUsage): Promise<void> {
    const root = project.root;
    for (const [agentId, entry] of Object.entries(project.file.agents)) {
      if (!entry.reading || this.tracked.has(agentId)) continue;
      for (const key of Object.keys(entry.sources)) {
        const source = this.records.fromKey(key);
        if (!source) continue;
        try {
          // A long record takes several reads (each at most READ_CHUNK_BYTES).
          let rounds = 0;
          while ((await source.poll()) && rounds++ < 10_000);
        } catch (error) {
          this.log.event("usage_read_failed", { projectRoot: root, agentId, error });
          continue;
        }
        if (Object.keys(source.tally()).length > 0) entry.sources[key] = source.tally();
      }
      delete entry.reading;
      project.dirty = true;
    }
    if (project.dirty) this.changed(root);
  }

  private entryOf(project: ProjectUsage, agent: { agentId: string; name: string; agentType: string; startedAtMs: number }): AgentUsage {
    const existing = project.file.agents[agent.agentId];
    if (existing) return existing;
    const created: AgentUsage = { name: agent.name, agentType: agent.agentType, startedAt: new Date(agent.startedAtMs).toISOString(), sources: {} };
    const owner = this.pendingOwners.get(agent.agentId);
    if (owner) {
      created.owner = owner;
      this.pendingOwners.delete(agent.agentId);
    }
    project.file.agents[agent.agentId] = created;
    return created;
  }

  private async pollAll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const now = Date.now();
      const changedRoots = new Set<string>();
      this.polls += 1;
      for (const agent of [...this.tracked.values()]) {
        // Every second where a budget may need enforcing (within 2 s), else every other second.
        if (this.polls % 2 === 1 && !(await this.budgeted(agent)) && agent.exitedAt === undefined) continue;
        try {
          if (await this.pollAgent(agent, now)) changedRoots.add(agent.root);
        } catch (error) {
          this.log.event("usage_read_failed", { agentId: agent.agentId, error });
        }
        if (agent.exitedAt !== undefined && now - agent.exitedAt > AFTER_EXIT_MS) {
          this.tracked.delete(agent.agentId);
          const project = await this.store.project(agent.root);
          const entry = project.file.agents[agent.agentId];
          if (entry?.reading) {
            delete entry.reading;
            project.dirty = true;
          }
        }
      }
      for (const root of changedRoots) this.changed(root);
      // New figures, or (every few seconds) a config whose daily budget changed under them.
      const roots = this.polls % 10 === 0 ? new Set([...changedRoots, ...[...this.tracked.values()].map((a) => a.root)]) : changedRoots;
      for (const root of roots) await this.checkDailyBudget(root);
      for (const root of changedRoots) await this.enforceOwnerBudgets(root);
    } finally {
      this.polling = false;
    }
  }

  private async pollAgent(agent: TrackedAgent, now: number): Promise<boolean> {
    const project = await this.store.project(agent.root);
    const entry = this.entryOf(project, agent);
    if (now - agent.discoveredAt >= DISCOVER_MS) {
      agent.discoveredAt = now;
      if (await this.discover(agent, entry)) {
        project.dirty = true;
        await this.store.persist(agent.root);
      }
    }
    const readOutside = this.readOutsidePoll.delete(agent.agentId);
    const changed = (await this.readSources(agent, project, entry)) || readOutside;
    // Asked as often as records are looked for: the orchestrators' answer is not free.
    if (!entry.owner && agent.discoveredAt === now) {
      const owner = this.ownerOf(agent.root, agent.agentId);
      if (owner) {
        entry.owner = owner;
        project.dirty = true;
      }
    }
    if (!changed) return false;
    await this.enforceBudget(agent, project, entry);
    return true;
  }

  /**
   * The agent's records not followed yet, named in its entry the moment they are found (a daemon
   * killed before its next write then re-reads them: see settle). True when any was found.
   */
  private async discover(agent: TrackedAgent, entry: AgentUsage): Promise<boolean> {
    const found = await this.records.discover(agent, agent.sources, [...this.tracked.values()]);
    for (const source of found) {
      agent.sources.set(source.key, source);
      entry.sources[source.key] ??= {};
    }
    return found.length > 0;
  }

  /** Reads what the agent's records gained; their tallies replace the entry's. True when they changed. */
  private async readSources(agent: TrackedAgent, project: ProjectUsage, entry: AgentUsage): Promise<boolean> {
    let changed = false;
    for (const source of agent.sources.values()) if (await source.poll()) changed = true;
    if (!changed) return false;
    for (const source of agent.sources.values()) entry.sources[source.key] = source.tally();
    project.dirty = true;
    return true;
  }

  private async budgeted(agent: TrackedAgent): Promise<boolean> {
    const project = await this.store.project(agent.root);
    const entry = project.file.agents[agent.agentId];
    const budget = entry?.budget;
    const owner = entry?.owner;
    return (budget !== undefined && !budget.exceededAt) || project.prices?.daily !== undefined || (owner !== undefined && this.ownerBudgets.has(ownerKey(agent.root, owner)));
  }

  /** Today's figures of the whole project against `budgets.daily`: told once a day when spent. */
  private async checkDailyBudget(root: string): Promise<void> {
    const project = await this.store.project(root);
    const prices = await this.store.prices(project);
    const daily = project.prices?.daily;
    const today = new Date().toISOString().slice(0, 10);
    if (!daily || project.dailySpentOn === today) return;
    const totals = dayTotals(project.file, prices, today);
    if (!isOver(daily, totals)) return;
    project.dailySpentOn = today;
    const message = `the daily budget (${describeBudget(daily)}) is spent today (${describeSpent(totals)}): the queue is paused; raise budgets.daily in .pu/config.yaml or wait for tomorrow (UTC), then pu queue resume`;
    this.log.event("daily_budget_spent", { projectRoot: root, tokens: budgetTokens(totals), costUsd: totals.costUsd, daily });
    this.dailySpent(root, message);
  }

  private async enforceBudget(agent: TrackedAgent, project: ProjectUsage, entry: AgentUsage): Promise<void> {
    const budget = entry.budget;
    if (!budget || budget.exceededAt || (budget.maxTokens === undefined && budget.maxCost === undefined)) return;
    const totals = totalsOf(entry, await this.store.prices(project));
    if (!isOver(budget, totals)) return;
    this.stopAtBudget(agent.root, agent.agentId, budget, totals);
    project.dirty = true;
    await this.store.persist(agent.root);
  }

  /** The agent's figures reached its budget: recorded as exceeded (the caller writes it), its turn interrupted, logged. */
  private stopAtBudget(root: string, agentId: string, budget: AgentBudget, totals: Totals): void {
    budget.exceededAt = new Date().toISOString();
    this.interrupt(agentId);
    this.log.event("budget_exceeded", { projectRoot: root, agentId, tokens: budgetTokens(totals), costUsd: totals.costUsd, budget });
  }

  /** The agent's turn, if the daemon holds it running, interrupted as a person would. */
  private interrupt(agentId: string): void {
    const live = this.state.sessions.get(agentId);
    if (live) interruptTurn(this.state, live);
  }

  /** Why a group (or plan) may start nothing more: its agents together reached `limit`; undefined while under it. */
  async ownerOver(root: string, owner: UsageOwner, limit: OwnerLimit): Promise<string | undefined> {
    return overBy(limitOf(limit), await this.ownerFigures(root, owner));
  }

  /** A group's agent, started: counted toward the group's budget, and interrupted with the rest once it is spent. */
  limitOwner(root: string, owner: UsageOwner, agentId: string, limit: OwnerLimit): void {
    this.ownerBudgets.set(ownerKey(root, owner), { root, owner, limit: limitOf(limit) });
    void this.store.project(root).then((project) => {
      const entry = project.file.agents[agentId];
      if (entry && !entry.owner) {
        entry.owner = owner;
        project.dirty = true;
      }
      if (!entry) this.pendingOwners.set(agentId, owner);
    });
  }

  /** Groups whose budget is spent: every running member's turn is interrupted, once. */
  private async enforceOwnerBudgets(root: string): Promise<void> {
    for (const [key, held] of this.ownerBudgets) {
      if (held.root !== root || held.spentAt) continue;
      const why = await this.ownerOver(root, held.owner, held.limit);
      if (why === undefined) continue;
      held.spentAt = new Date().toISOString();
      this.log.event("owner_budget_spent", { projectRoot: root, owner: held.owner, why });
      const project = await this.store.project(root);
      for (const [agentId, entry] of Object.entries(project.file.agents)) {
        if (entry.owner?.kind !== held.owner.kind || entry.owner.id !== held.owner.id) continue;
        entry.budget = { ...entry.budget, exceededAt: held.spentAt };
        project.dirty = true;
        this.interrupt(agentId);
      }
      this.ownerBudgets.set(key, held);
    }
  }

  /**
   * `pu budget` / `pu spawn --max-…`: sets the agent's limits; raising them past its figures lets
   * it go on, and lowering them to its figures or under stops its turn now (not at its next call).
   */
  async setBudget(root: string, agentId: string, limits: BudgetLimit, known: { name: string; agentType: string; startedAt: string }): Promise<AgentUsageView> {
    const project = await this.store.writable(root);
    const entry = this.entryOf(project, { agentId, name: known.name, agentType: known.agentType, startedAtMs: Date.parse(known.startedAt) });
    const budget: AgentBudget = { ...entry.budget };
    if (limits.maxTokens !== undefined) budget.maxTokens = limits.maxTokens;
    if (limits.maxCost !== undefined) budget.maxCost = limits.maxCost;
    const totals = totalsOf(entry, await this.store.prices(project));
    const over = isOver(budget, totals);
    if (budget.exceededAt && !over) delete budget.exceededAt;
    if (!budget.exceededAt && over) this.stopAtBudget(root, agentId, budget, totals);
    entry.budget = budget;
    project.dirty = true;
    await this.store.persist(root);
    this.changed(root);
    return agentView(entry, totals);
  }

  /**
   * A ticket step's limits on its agent: the ticket's over all the agent spent, the step's over
   * what it spent before the step; the lower of the two. No limit set leaves the agent's own.
   */
  async limitStep(root: string, agentId: string, limits: { ticket: BudgetLimit; step: BudgetLimit }): Promise<void> {
    const { ticket, step } = limits;
    if (ticket.maxCost === undefined && ticket.maxTokens === undefined && step.maxCost === undefined && step.maxTokens === undefined) return;
    const project = await this.store.writable(root);
    const entry = project.file.agents[agentId];
    const spent = entry ? totalsOf(entry, await this.store.prices(project)) : emptyTotals();
    const target = entry ?? this.entryOf(project, { agentId, name: agentId, agentType: "unknown", startedAtMs: Date.now() });
    target.budget = stepBudget(spent, ticket, step);
    project.dirty = true;
    await this.store.persist(root);
  }

  /** Why the agent was stopped at its budget ("max $0.5", …), or undefined while it is under it. */
  overBudget(agentId: string): string | undefined {
    const budget = this.store.loadedEntry(agentId)?.budget;
    return budget?.exceededAt ? describeBudget(budget) : undefined;
  }

  /** `pu send` to an agent stopped for its budget: one line saying how to go on. */
  assertWithinBudget(agentId: string): void {
    const budget = this.store.loadedEntry(agentId)?.budget;
    if (!budget?.exceededAt) return;
    const raise = budget.maxCost !== undefined ? "--max-cost USD" : "--max-tokens N";
    throw new PuError("INVALID_STATE", `${agentId} was stopped at its budget (${describeBudget(budget)}); raise it first: pu budget ${agentId} ${raise}`, {
      details: { agentId, budget },
    });
  }

  /** An agent that just exited: its records read to the end now, and its figures (null: none found). */
  async finalFigures(root: string, agentId: string): Promise<AgentUsageView["usage"]> {
    const project = await this.store.project(root);
    const entry = await this.readToEnd(project, agentId);
    return entry ? agentView(entry, totalsOf(entry, await this.store.prices(project))).usage : null;
  }

  /** A tracked agent's records read up to what its CLI has written so far; its entry (if any). */
  private async readToEnd(project: ProjectUsage, agentId: string): Promise<AgentUsage | undefined> {
    const agent = this.tracked.get(agentId);
    const entry = project.file.agents[agentId];
    // Its budget, its owner's and the status streams hear of what was read at the next poll, as if the poll had read it.
    if (agent && entry && (await this.readSources(agent, project, entry))) this.readOutsidePoll.add(agentId);
    return entry;
  }

  /** The figures of these agents (null: no record found), for `pu group compare` and `pu plan show`. */
  async figuresOf(root: string, agentIds: readonly string[]): Promise<Map<string, AgentUsageView["usage"]>> {
    const project = await this.store.project(root);
    const prices = await this.store.prices(project);
    const figuresOfAgent = (entry: AgentUsage | undefined) => (entry ? agentView(entry, totalsOf(entry, prices)).usage : null);
    return new Map(agentIds.map((id) => [id, figuresOfAgent(project.file.agents[id])]));
  }

  /**
   * What every agent of one ticket, group or plan used, as recorded while they ran (null: none
   * recorded): this machine's records, and its agents' on hosts as the hosts last reported them.
   */
  async ownerFigures(root: string, owner: UsageOwner): Promise<AgentUsageView["usage"]> {
    const totals = (await this.ownerTotals(root, owner, () => "")).get("");
    const far = await this.elsewhere(root, owner).catch(() => []);
    if (!totals && far.length === 0) return null;
    const sum = totals ?? emptyTotals();
    for (const figures of far) addFigures(sum, figures);
    return figuresOf(sum);
  }

  /**
   * What a ticket used so far: its agents (`currentAgentId`'s records read to the end now, whether
   * or not it has been named the ticket's yet) and the members of its groups, here and on hosts.
   */
  async ticketTotals(root: string, ticketId: string, currentAgentId: string | undefined, groupIds: readonly string[]): Promise<Totals> {
    const current = currentAgentId ? await this.finalFigures(root, currentAgentId) : null;
    const sum = emptyTotals();
    for (const owner of [{ kind: "ticket" as const, id: ticketId }, ...groupIds.map((id) => ({ kind: "group" as const, id }))]) {
      const figures = await this.ownerFigures(root, owner);
      if (figures) addFigures(sum, figures);
    }
    // Its owner is named on a later poll: until then the ticket's own count leaves it out.
    if (current && currentAgentId && !this.store.loadedEntry(currentAgentId)?.owner) addFigures(sum, current);
    return sum;
  }

  /**
   * What one ticket's, group's or plan's agents used, summed per agent name (a plan's worker on a
   * task keeps the task's name across restarts): for `pu plan show`'s cost per task.
   */
  async ownerFiguresByName(root: string, owner: UsageOwner): Promise<Map<string, UsageFigures>> {
    const byName = await this.ownerTotals(root, owner, (entry) => entry.name);
    return new Map([...byName].map(([name, totals]) => [name, figuresOf(totals)]));
  }

  /** The totals of one owner's agents that recorded anything, summed per `groupOf` (no group: none recorded). */
  private async ownerTotals(root: string, owner: UsageOwner, groupOf: (entry: AgentUsage) => string): Promise<Map<string, Totals>> {
    const project = await this.store.project(root);
    return ownerTotalsIn(project.file, await this.store.prices(project), owner, groupOf);
  }

  /** Before the first report of a project: its usage file read and prices loaded, so the report has its figures. */
  async prepare(root: string): Promise<void> {
    await this.store.prices(await this.store.project(root));
  }

  /** Each agent's figures and budget added to a status report (from memory: no file is read). */
  decorate(report: StatusReport): StatusReport {
    const project = this.store.loaded(report.projectRoot);
    if (!project) {
      void this.store.project(report.projectRoot);
      return report;
    }
    return decorateReport(report, project.file, this.store.pricesNow(project));
  }

  /**
   * `pu usage`: every agent of the project, alive or gone, rolled up as asked. Named agents (a
   * control plane asking for its agents here) have their records read to the end first, so a
   * step that just ended is counted whole before the next one's budget is set.
   */
  async usage(root: string, by: UsageGrouping, since?: string, agentIds?: readonly string[]): Promise<UsageResult> {
    const project = await this.store.project(root);
    if (project.problem) throw new PuError("CONFIG_ERROR", project.problem);
    for (const agentId of agentIds ?? []) await this.readToEnd(project, agentId);
    return { projectRoot: root, ...rollUp(project.file, await this.store.prices(project), by, since, agentIds ? new Set(agentIds) : undefined) };
  }
}
