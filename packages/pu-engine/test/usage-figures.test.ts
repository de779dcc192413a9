// `pu usage` across machines: this machine's roll-up joined with each host's roll-up of the
// agents pu placed there. Pure: no daemon, no host.
import { describe, expect, it } from "vitest";
import type { UsageResult, UsageRow } from "@pu/ipc/protocol";
import { emptyTotals, overBy, withHostUsage } from "../src/usage/usage-figures.js";

const row = (key: string, input: number, costUsd: number | null, agents = 1): UsageRow => ({ key, label: key, agents, input, output: 10, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 1, costUsd });

const result = (by: UsageResult["by"], rows: UsageRow[], unknownAgents = 0): UsageResult => {
  const total = rows.reduce<UsageRow>(
    (sum, r) => ({ ...sum, agents: sum.agents + r.agents, input: sum.input + r.input, output: sum.output + r.output, calls: sum.calls + r.calls, costUsd: sum.costUsd === null || r.costUsd === null ? null : sum.costUsd + r.costUsd }),
    row("total", 0, 0, 0),
  );
  return { projectRoot: "/p", by, since: null, rows, total: { ...total, calls: rows.length }, unknownAgents };
};

describe("withHostUsage", () => {
  it("agent rows gain their host; the total and unknown agents add up", () => {
    const merged = withHostUsage(result("agent", [row("ag-local", 100, 1)], 1), [{ host: "gpu", result: result("agent", [row("ag-far", 300, 3)], 2) }]);
    expect(merged.rows.map((r) => [r.key, r.host])).toEqual([["ag-far", "gpu"], ["ag-local", undefined]]);
    expect(merged.total).toMatchObject({ input: 400, costUsd: 4, agents: 2, calls: 2 });
    expect(merged.unknownAgents).toBe(3);
    expect(merged.unansweredHosts).toBeUndefined();
  });

  it("a model row on both machines is one row; a cost unknown anywhere is unknown in the sum", () => {
    const merged = withHostUsage(result("model", [row("sonnet", 100, 1), row("fake", 5, null)]), [{ host: "gpu", result: result("model", [row("sonnet", 300, 3, 2)]) }]);
    expect(merged.rows.find((r) => r.key === "sonnet")).toMatchObject({ input: 400, costUsd: 4, agents: 3, calls: 2 });
    expect(merged.total.costUsd).toBeNull();
  });

  it("a host that did not answer is named and counted as nothing, not as 0 tokens of its agents", () => {
    const local = result("agent", [row("ag-local", 100, 1)]);
    const merged = withHostUsage(local, [{ host: "gpu", result: null }, { host: "gpu", result: null }]);
    expect(merged.rows).toEqual(local.rows);
    expect(merged.unansweredHosts).toEqual(["gpu"]);
  });

  it("by day, rows stay in order of days after the join", () => {
    const merged = withHostUsage(result("day", [row("2026-11-25", 1, 0)]), [{ host: "gpu", result: result("day", [row("2026-11-24", 1, 0), row("2026-11-25", 1, 0)]) }]);
    expect(merged.rows.map((r) => [r.key, r.input])).toEqual([["2026-11-24", 1], ["2026-11-25", 2]]);
  });
});

describe("overBy", () => {
  const spent = (input: number, output: number, costUsd: number | null) => ({ ...emptyTotals(), input, output, calls: 1, costUsd });

  it("says nothing while under the budget, and the budget and the spend once it is reached", () => {
    expect(overBy({ maxTokens: 1000 }, spent(500, 50, 0.01))).toBeUndefined();
    expect(overBy({ maxTokens: 450 }, spent(500, 50, 0.01))).toBe("max 450 tokens, spent 550 tokens, $0.01");
    expect(overBy({ maxTokens: 5000, maxCost: 0.5 }, spent(500, 50, 0.5))).toBe("max 5000 tokens / $0.5, spent 550 tokens, $0.50");
  });

  it("a cost no price gives never reaches a cost budget; no figures are under any budget", () => {
    expect(overBy({ maxCost: 0.01 }, spent(500, 50, null))).toBeUndefined();
    expect(overBy({ maxTokens: 1 }, null)).toBeUndefined();
  });
});
