/**
 * Figures from tallies, without I/O: totals of an agent or a set of agents, whether a budget is
 * crossed and how to say so, and `pu usage`'s roll-ups over a project's usage file.
 */
import type { BudgetLimit } from "@pu/core/config";
import { ZERO_TOKENS, budgetTokens, lowerLimit, splitTallyKey, type TokenCounts, type UsageTally } from "@pu/core/usage";
import type { AgentUsage, UsageFile, UsageOwner } from "@pu/core/usage-file";
import type { AgentUsageView, StatusReport, UsageFigures, UsageGrouping, UsageResult, UsageRow } from "@pu/ipc/protocol";
import type { PriceBook } from "./prices.js";

/** Tokens, calls, and their cost (null when a model among them has no price). */
export interface Totals extends TokenCounts {
  calls: number;
  costUsd: number | null;
}

export function emptyTotals(): Totals {
  return { ...ZERO_TOKENS, calls: 0, costUsd: 0 };
}

function accumulate(into: Totals, counts: Readonly<TokenCounts & { calls: number }>, cost: number | null): void {
  into.input += counts.input;
  into.cacheRead += counts.cacheRead;
  into.cacheWrite += counts.cacheWrite;
  into.output += counts.output;
  into.reasoning += counts.reasoning;
  into.calls += counts.calls;
  into.costUsd = into.costUsd === null || cost === null ? null : into.costUsd + cost;
}

/** Adds a tally (its days passing `keepDay`, when given) to `totals`, each model at its price. */
function addTally(totals: Totals, tally: UsageTally, prices: PriceBook, keepDay?: (day: string) => boolean): void {
  for (const [key, counts] of Object.entries(tally)) {
    const { day, model } = splitTallyKey(key);
    if (keepDay && !keepDay(day)) continue;
    accumulate(totals, counts, prices.cost(model, counts));
  }
}

/** Adds figures another daemon reported (a host's agent) to `totals`, at the cost it gave. */
export function addFigures(totals: Totals, figures: Readonly<UsageFigures>): void {
  accumulate(totals, figures, figures.costUsd);
}

/** All of one agent's record sources. */
export function totalsOf(entry: AgentUsage, prices: PriceBook): Totals {
  const totals = emptyTotals();
  for (const tally of Object.values(entry.sources)) addTally(totals, tally, prices);
  return totals;
}

/**
 * Whether any call was counted: a source is named in the file as soon as it is found (so a daemon
 * killed before its first write re-reads it), and a source with nothing in it says nothing yet.
 */
function hasFigures(entry: AgentUsage): boolean {
  for (const source in entry.sources) for (const _key in entry.sources[source]) return true;
  return false;
}

/** What the protocol carries of totals. */
export function figuresOf(totals: Totals): UsageFigures {
  const { input, output, cacheRead, cacheWrite, reasoning, calls, costUsd } = totals;
  return { input, output, cacheRead, cacheWrite, reasoning, calls, costUsd };
}

/** What status reports and `pu agent show` carry of an agent: its figures (null: none recorded) and its budget. */
export function agentView(entry: AgentUsage, totals: Totals): AgentUsageView {
  const view: AgentUsageView = { usage: hasFigures(entry) ? figuresOf(totals) : null };
  if (entry.budget) view.budget = { ...entry.budget };
  return view;
}

/** Each local agent of a status report given its figures and budget (agents on hosts carry their host's). */
export function decorateReport(report: StatusReport, file: UsageFile, prices: PriceBook): StatusReport {
  const views = [...Object.values(report.agents), ...Object.values(report.worktrees).flatMap((wt) => Object.values(wt.agents))];
  for (const agent of views) {
    if (agent.host) continue;
    const entry = file.agents[agent.id];
    if (!entry) {
      agent.usage = null;
      continue;
    }
    Object.assign(agent, agentView(entry, totalsOf(entry, prices)));
  }
  return report;
}

/** The totals of one owner's agents that recorded anything, summed per `groupOf` (no group: none recorded). */
export function ownerTotalsIn(file: UsageFile, prices: PriceBook, owner: UsageOwner, groupOf: (entry: AgentUsage) => string): Map<string, Totals> {
  const groups = new Map<string, Totals>();
  for (const entry of Object.values(file.agents)) {
    if (entry.owner?.kind !== owner.kind || entry.owner.id !== owner.id || !hasFigures(entry)) continue;
    const key = groupOf(entry);
    let totals = groups.get(key);
    if (!totals) groups.set(key, (totals = emptyTotals()));
    for (const tally of Object.values(entry.sources)) addTally(totals, tally, prices);
  }
  return groups;
}

/** A project's figures over one UTC day (`YYYY-MM-DD`), every agent's. */
export function dayTotals(file: UsageFile, prices: PriceBook, day: string): Totals {
  const totals = emptyTotals();
  for (const entry of Object.values(file.agents)) for (const tally of Object.values(entry.sources)) addTally(totals, tally, prices, (d) => d === day);
  return totals;
}

/** The key of a group's or plan's budget. */
export function ownerKey(root: string, owner: UsageOwner): string {
  return `${root}\0${owner.kind}:${owner.id}`;
}

export function isOver(budget: BudgetLimit, totals: Totals): boolean {
  if (budget.maxTokens !== undefined && budgetTokens(totals) >= budget.maxTokens) return true;
  return budget.maxCost !== undefined && totals.costUsd !== null && totals.costUsd >= budget.maxCost;
}

/** Why `totals` reached `budget` (`max 450 tokens, spent 550 tokens`), the one wording of a spent budget; undefined while under it. */
export function overBy(budget: BudgetLimit, totals: Totals | null | undefined): string | undefined {
  if (!totals || !isOver(budget, totals)) return undefined;
  return `${describeBudget(budget)}, spent ${describeSpent(totals)}`;
}

/**
 * A ticket step's budget on its agent: the ticket's limits over all the agent spent, the step's
 * over what it had spent when the step began (`spent`); the lower of the two.
 */
export function stepBudget(spent: Totals, ticket: BudgetLimit, step: BudgetLimit): BudgetLimit {
  const budget: BudgetLimit = {};
  const maxTokens = lowerLimit(ticket.maxTokens, step.maxTokens === undefined ? undefined : budgetTokens(spent) + step.maxTokens);
  const maxCost = lowerLimit(ticket.maxCost, step.maxCost === undefined ? undefined : (spent.costUsd ?? 0) + step.maxCost);
  if (maxTokens !== undefined) budget.maxTokens = maxTokens;
  if (maxCost !== undefined) budget.maxCost = maxCost;
  return budget;
}

/** `max 1000 tokens / $5`. */
export function describeBudget(budget: BudgetLimit): string {
  const parts: string[] = [];
  if (budget.maxTokens !== undefined) parts.push(`${budget.maxTokens} tokens`);
  if (budget.maxCost !== undefined) parts.push(`$${budget.maxCost}`);
  return `max ${parts.join(" / ")}`;
}

/** `1100 tokens, $0.01` (the cost left out when a model has no price). */
export function describeSpent(totals: Totals): string {
  return `${budgetTokens(totals)} tokens${totals.costUsd === null ? "" : `, $${totals.costUsd.toFixed(2)}`}`;
}

/** A group's or plan's limits as their records keep them (null: none). */
export type OwnerLimit = { maxCost?: number | null; maxTokens?: number | null };

export function limitOf(limit: OwnerLimit): BudgetLimit {
  const budget: BudgetLimit = {};
  if (limit.maxCost != null) budget.maxCost = limit.maxCost;
  if (limit.maxTokens != null) budget.maxTokens = limit.maxTokens;
  return budget;
}

/**
 * `pu usage`: every agent of the file, alive or gone, rolled up as asked. One pass with no
 * allocation per tally entry: 10,000 agents answer in well under 100 ms.
 */
export function rollUp(file: UsageFile, prices: PriceBook, by: UsageGrouping, since: string | undefined, only?: ReadonlySet<string>): Omit<UsageResult, "projectRoot"> {
  const rows = new Map<string, UsageRow & { seen: Set<string> | undefined }>();
  const total: UsageRow = { key: "total", label: "total", agents: 0, ...emptyTotals() };
  let unknownAgents = 0;
  for (const agentId in file.agents) {
    if (only && !only.has(agentId)) continue;
    const entry = file.agents[agentId]!;
    let known = false;
    for (const source in entry.sources) {
      const tally = entry.sources[source]!;
      for (const key in tally) {
        known = true;
        const bar = key.indexOf("|");
        const day = key.slice(0, bar);
        if (since !== undefined && day < since) continue;
        const model = key.slice(bar + 1);
        const counts = tally[key]!;
        const cost = prices.cost(model, counts);
        const groupKey = by === "agent" ? agentId : by === "model" ? model : by === "day" ? day : entry.owner?.kind === by ? entry.owner.id : `(no ${by})`;
        let row = rows.get(groupKey);
        if (!row) {
          row = { key: groupKey, label: by === "agent" ? entry.name : groupKey, agents: by === "agent" ? 1 : 0, ...emptyTotals(), seen: by === "agent" ? undefined : new Set() };
          if (by === "agent") row.agentType = entry.agentType;
          rows.set(groupKey, row);
        }
        row.seen?.add(agentId);
        accumulate(row, counts, cost);
        accumulate(total, counts, cost);
      }
    }
    if (!known && (since === undefined || entry.startedAt.slice(0, 10) >= since)) unknownAgents += 1;
  }
  const list: UsageRow[] = [];
  for (const { seen, ...row } of rows.values()) {
    if (seen) row.agents = seen.size;
    list.push(row);
  }
  total.agents = by === "agent" ? list.length : new Set([...rows.values()].flatMap((r) => [...(r.seen ?? [])])).size;
  return { by, since: since ?? null, rows: sortRows(list, by), total, unknownAgents };
}

/** Days in order; everything else the costliest first (unknown cost first: it may be the largest). */
function sortRows(rows: UsageRow[], by: UsageGrouping): UsageRow[] {
  return rows.sort((a, b) => (by === "day" ? (a.key < b.key ? -1 : 1) : (b.costUsd ?? Number.POSITIVE_INFINITY) - (a.costUsd ?? Number.POSITIVE_INFINITY) || budgetTokens(b) - budgetTokens(a)));
}

/**
 * This machine's roll-up with each host's roll-up of the agents pu placed there: agent rows
 * gain their host, other rows (a model, a day, a ticket) add up across machines. A host that did
 * not answer is named, never counted as 0.
 */
export function withHostUsage(local: UsageResult, hosts: readonly { host: string; result: UsageResult | null }[]): UsageResult {
  if (hosts.length === 0) return local;
  const rows = new Map(local.rows.map((row) => [row.key, { ...row }]));
  const total = { ...local.total };
  let unknownAgents = local.unknownAgents;
  const unanswered: string[] = [];
  for (const { host, result } of hosts) {
    if (!result) {
      if (!unanswered.includes(host)) unanswered.push(host);
      continue;
    }
    for (const row of result.rows) {
      const mine = rows.get(row.key);
      if (local.by === "agent" || !mine) rows.set(row.key, local.by === "agent" ? { ...row, host } : { ...row });
      else addRow(mine, row);
    }
    addRow(total, result.total);
    unknownAgents += result.unknownAgents;
  }
  const merged: UsageResult = { ...local, rows: sortRows([...rows.values()], local.by), total, unknownAgents };
  if (unanswered.length > 0) merged.unansweredHosts = unanswered;
  return merged;
}

function addRow(into: UsageRow, row: UsageRow): void {
  accumulate(into, row, row.costUsd);
  into.agents += row.agents;
}
