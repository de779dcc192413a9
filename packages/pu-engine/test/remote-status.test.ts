// What a control plane killed between a host's spawn and its record adopts from the host's
// next report: agents started since the ask that it does not route yet, with their worktrees.
import { describe, expect, it } from "vitest";
import type { RemoteProject } from "@pu/core/remote-projects-file";
import type { AgentView, StatusReport } from "@pu/ipc/protocol";
import { statusLabel } from "@pu/core/status-label";
import { addHostAgents, unrecordedSince, withSpawned } from "../src/hosts/remote-status.js";

const agent = (id: string, startedAt: string) => ({ id, name: id, agentType: "terminal", status: "streaming", startedAt }) as unknown as AgentView;

const project: RemoteProject = { host: "box", projectRoot: "/p", mirror: "/m", baseBranch: "main", agentIds: ["ag-known"], worktreeIds: ["wt-known"], merged: [], lastReport: null, lastSeenAt: null, spawning: [] };

const report = {
  projectRoot: "/m",
  agents: { "ag-root-new": agent("ag-root-new", "2026-11-26T10:00:05Z"), "ag-root-old": agent("ag-root-old", "2026-11-26T09:00:00Z") },
  worktrees: {
    "wt-known": { id: "wt-known", agents: { "ag-known": agent("ag-known", "2026-11-26T10:00:01Z") } },
    "wt-new": { id: "wt-new", status: "active", agents: { "ag-new": agent("ag-new", "2026-11-26T10:00:02Z") } },
    "wt-gone": { id: "wt-gone", status: "cleaned", agents: { "ag-gone": agent("ag-gone", "2026-11-26T10:00:03Z") } },
  },
} as unknown as StatusReport;

describe("unrecordedSince", () => {
  it("adopts what started since the ask and is not routed; leaves what pu routes, what is older and what was cleaned", () => {
    expect(unrecordedSince(project, report, ["2026-11-26T10:00:00Z"])).toEqual({ agentIds: ["ag-root-new", "ag-new"], worktreeIds: ["wt-new"] });
  });

  it("nothing started since the ask: nothing adopted", () => {
    expect(unrecordedSince(project, report, ["2026-11-26T11:00:00Z"])).toEqual({ agentIds: [], worktreeIds: [] });
  });
});

describe("addHostAgents", () => {
  const empty = (): StatusReport => ({ projectRoot: "/p", worktrees: {}, agents: {}, createdAt: "2026-11-26T10:00:00Z", updatedAt: "2026-11-26T10:00:00Z" });

  it("an agent pu routes that no report holds is still listed: its status unknown, its host unreachable", () => {
    const merged = empty();
    addHostAgents(merged, { ...project, agentIds: ["ag-never"], worktreeIds: [] }, { report: null, reachable: false, seenAt: null });
    expect(merged.agents["ag-never"]).toMatchObject({ id: "ag-never", status: "unknown", host: "box", hostState: "unreachable", live: false });
    expect(statusLabel(merged.agents["ag-never"]!)).toBe("unknown (host unreachable)");
  });

  it("a spawn's answer kept as heard lists the agent in its worktree until the host reports it", () => {
    const spawned = { agentId: "ag-new", worktreeId: "wt-new", worktreePath: "/m/.pu/worktrees/wt-new", branch: "pu/x", cwd: "/m", agent: agent("ag-new", "2026-11-26T10:00:05Z"), warnings: [] };
    const heard = withSpawned(null, "/m", spawned);
    const merged = empty();
    addHostAgents(merged, { ...project, agentIds: ["ag-new"], worktreeIds: ["wt-new"] }, { report: heard, reachable: false, seenAt: null });
    expect(merged.worktrees["wt-new"]?.agents["ag-new"]).toMatchObject({ status: "streaming", hostState: "unreachable" });
    expect(merged.agents["ag-new"]).toBeUndefined();
    // Already reported: the report is left as it is.
    expect(withSpawned(heard, "/m", spawned)).toBe(heard);
  });
});
