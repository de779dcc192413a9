import { describe, expect, it } from "vitest";
import type { StatusReport } from "@pu/ipc/protocol";
import { agentRow as agent } from "./agent-row.js";
import { dashProblems, dashRows, newlyWaiting, problemLines, statusLabel } from "../src/dash/model.js";


const report = (root: string, fields: Record<string, unknown>) =>
  ({ projectRoot: root, createdAt: "", updatedAt: "", agents: {}, worktrees: {}, ...fields }) as unknown as StatusReport;

describe("dashboard rows", () => {
  const a = report("/work/a", {
    agents: { "ag-late0001": agent("ag-late0001", { startedAt: "2026-03-08T12:05:00.000Z" }), "ag-first001": agent("ag-first001", { name: "Lead" }) },
    worktrees: {
      "wt-1": { id: "wt-1", name: "fix-auth", status: "active", createdAt: "2026-03-08T12:01:00.000Z", agents: { "ag-wt000001": agent("ag-wt000001", { agentType: "claude", model: "opus" }) } },
      "wt-2": { id: "wt-2", name: "old", status: "merged", createdAt: "2026-03-08T11:00:00.000Z", agents: { "ag-gone0001": agent("ag-gone0001") } },
    },
  });
  const b = report("/work/b", { agents: { "ag-other001": agent("ag-other001", { status: "waiting", waitingReason: "permission" }) } });

  it("lists each project's root agents, then its active worktrees' agents, oldest first", () => {
    const rows = dashRows([a, b]);
    expect(rows.map((r) => [r.projectRoot, r.place, r.agentId])).toEqual([
      ["/work/a", "(root)", "ag-first001"],
      ["/work/a", "(root)", "ag-late0001"],
      ["/work/a", "fix-auth", "ag-wt000001"],
      ["/work/b", "(root)", "ag-other001"],
    ]);
    expect(rows[2]).toMatchObject({ worktreeId: "wt-1", model: "opus", agentType: "claude" });
  });

  it("filters on id, name, place, type and status", () => {
    expect(dashRows([a, b], "fix").map((r) => r.agentId)).toEqual(["ag-wt000001"]);
    expect(dashRows([a, b], "LEAD").map((r) => r.agentId)).toEqual(["ag-first001"]);
    expect(dashRows([a, b], "waiting").map((r) => r.agentId)).toEqual(["ag-other001"]);
  });

  it("finds the agents that just started waiting, once", () => {
    const before = dashRows([a]);
    const turned = report("/work/a", { ...a, agents: { ...(a.agents as object), "ag-first001": agent("ag-first001", { name: "Lead", status: "waiting", waitingReason: "turn_end" }) } });
    const now = dashRows([turned]);
    expect(newlyWaiting(before, now).map((r) => r.agentId)).toEqual(["ag-first001"]);
    expect(newlyWaiting(now, now)).toEqual([]);
    expect(statusLabel(now[0]!)).toBe("waiting (done)");
    expect(statusLabel(dashRows([b])[0]!)).toBe("waiting (permission)");
  });

  it("an agent the queue, a group or a plan stopped after its work is broken (done), a killed one broken", () => {
    const rows = dashRows([
      report("/work/c", {
        agents: {
          "ag-done0001": agent("ag-done0001", { status: "broken", exitCode: 143, finishedBy: "plan", live: false }),
          "ag-kill0001": agent("ag-kill0001", { startedAt: "2026-03-08T12:01:00.000Z", status: "broken", exitCode: 143, live: false }),
        },
      }),
    ]);
    expect(rows.map(statusLabel)).toEqual(["broken (done)", "broken"]);
    expect(rows[0]!.finishedBy).toBe("plan");
  });

  it("an agent on a host names it in its place, and an unreachable host's agent keeps its last status with the reason", () => {
    const far = [
      report("/work/d", {
        worktrees: {
          "wt-9": { id: "wt-9", name: "remote-fix", status: "active", createdAt: "2026-03-08T12:01:00.000Z", host: "gpu-box", agents: { "ag-far00001": agent("ag-far00001", { status: "waiting", waitingReason: "turn_end", host: "gpu-box", hostState: "unreachable", live: false }) } },
        },
      }),
    ];
    const rows = dashRows(far);
    expect(rows[0]).toMatchObject({ place: "remote-fix@gpu-box", host: "gpu-box", hostState: "unreachable" });
    expect(statusLabel(rows[0]!)).toBe("waiting (done) (host unreachable)");
    // The filter finds it by its host.
    expect(dashRows(far, "gpu-box").map((r) => r.agentId)).toEqual(["ag-far00001"]);
  });

  it("shows what each agent cost, ? for a model without a price, - for no record, and budget once pu stopped it there", () => {
    const costs = [
      report("/work/e", {
        agents: {
          "ag-cost0001": agent("ag-cost0001", { usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 1, costUsd: 0.4212 } }),
          "ag-cost0002": agent("ag-cost0002", { startedAt: "2026-03-08T12:06:00.000Z", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 1, costUsd: null } }),
          "ag-cost0003": agent("ag-cost0003", { startedAt: "2026-03-08T12:07:00.000Z", usage: null, status: "waiting", budget: { maxCost: 1, exceededAt: "2026-03-08T12:08:00.000Z" } }),
        },
      }),
    ];
    const rows = dashRows(costs);
    expect(rows.map((r) => r.cost)).toEqual(["$0.42", "?", "-"]);
    expect(rows.map((r) => statusLabel(r))).toEqual(["streaming", "streaming", "budget"]);
  });

  it("says each report's problems once, as pu status does, with control characters escaped", () => {
    const hosts = "agents on hosts are shown as last known: /h/hosts.json: not valid JSON";
    const problems = dashProblems([
      report("/work/a", { problems: [hosts, "bad\x1b[2Jline\nnext"] }),
      report("/work/b", { problems: [hosts] }),
      report("/work/c", {}),
    ]);
    expect(problems).toEqual([`problem: ${hosts}`, "problem: bad\\x1b[2Jline\\x0anext"]);
    expect(dashProblems([report("/work/c", {})])).toEqual([]);
  });

  it("keeps the problems to their room: the last line counts the rest and names pu status", () => {
    expect(problemLines(["problem: a", "problem: b"], 3)).toEqual(["problem: a", "problem: b"]);
    expect(problemLines(["problem: a", "problem: b", "problem: c", "problem: d"], 3)).toEqual(["problem: a", "problem: b", "2 more problems: `pu status` lists them"]);
    expect(problemLines(["problem: a", "problem: b"], 1)).toEqual(["2 problems: `pu status` lists them"]);
  });
});
