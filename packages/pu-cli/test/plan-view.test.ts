// `pu plan show` in text: the plan's cost against its budget, and each task's cost.
import { describe, expect, it } from "vitest";
import type { PlanView } from "@pu/ipc/protocol";
import { writePlanSummary } from "../src/plan-view.js";

const figures = (input: number, costUsd: number | null) => ({ input, output: 100, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 2, costUsd });

function plan(over: Partial<PlanView>): PlanView {
  return {
    sessionId: "p-1",
    goal: "a goal",
    phase: "EXECUTION",
    explorationStage: "complete",
    iteration: 1,
    approvedAt: "2026-11-26T00:00:00.000Z",
    options: { max_workers: 0, max_iterations: 5, skip_verify: false, plan_only: false, auto_mode: true },
    dir: "/p/.pu/plans/p-1",
    branch: "pu/plan-p-1",
    tasks: [],
    failure: null,
    problems: [],
    ...over,
  };
}

const lines = (view: PlanView) => {
  const out: string[] = [];
  writePlanSummary({ line: (text = "") => out.push(text), write: () => undefined, terminal: false, color: false }, view);
  return out;
};

describe("writePlanSummary", () => {
  it("shows the plan's cost with its budget, and each task's cost where its workers recorded any", () => {
    const shown = lines(
      plan({
        options: { max_workers: 0, max_iterations: 5, skip_verify: false, plan_only: false, auto_mode: true, max_cost: 5, max_tokens: 2_000_000 },
        usage: figures(1900, 1.25),
        tasks: [
          { id: "1", subject: "first", status: "resolved", blockedBy: [], usage: figures(900, 0.5) },
          { id: "2", subject: "second", status: "pending", blockedBy: ["1"], usage: null },
        ],
      }),
    );
    expect(shown).toContain("  cost $1.25 (2.0k tokens in 2 calls); budget max $5.00 / 2.0M tokens");
    expect(shown.find((l) => l.includes("1: first"))).toMatch(/\$0\.50$/);
    expect(shown.find((l) => l.includes("2: second"))).toMatch(/← 1$/);
  });

  it("a --plan-only session held after its plan names `pu plan run`, which starts its workers, not `pu plan approve`, which does not", () => {
    const planOnly = { max_workers: 0, max_iterations: 5, skip_verify: false, plan_only: true, auto_mode: false };
    const tasks = [{ id: "a", subject: "first", status: "open", blockedBy: [] }];
    const held = lines(plan({ phase: "PLANNING", approvedAt: null, options: planOnly, tasks }))[0];
    expect(held).toContain("waiting for `pu plan run p-1`");
    expect(held).not.toContain("pu plan approve");
    // Approved (by approve, or --auto), it still waits for run: approve's own output says so.
    expect(lines(plan({ phase: "PLANNING", options: planOnly, tasks }))[0]).toMatch(/approved 2026-11-26T00:00:00\.000Z; --plan-only: `pu plan run p-1` starts the workers$/);
    // Without --plan-only, approval is what it waits for; once run, nothing more is asked for.
    expect(lines(plan({ phase: "PLANNING", approvedAt: null, tasks }))[0]).toContain("waiting for `pu plan approve`");
    expect(lines(plan({ tasks }))[0]).toMatch(/approved 2026-11-26T00:00:00\.000Z$/);
  });

  it("a budget with nothing spent yet says so; no budget and no usage says nothing of cost", () => {
    expect(lines(plan({ options: { max_workers: 0, max_iterations: 5, skip_verify: false, plan_only: false, auto_mode: true, max_cost: 2 } }))).toContain("  budget max $2.00; nothing spent yet");
    expect(lines(plan({})).some((l) => /cost|budget/.test(l))).toBe(false);
  });
});
