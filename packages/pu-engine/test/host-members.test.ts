// How a member that ran on a host is recorded here, from the host's view of its one-member group.
import { describe, expect, it } from "vitest";
import type { GroupMemberView, GroupView } from "@pu/ipc/protocol";
import type { DaemonLog } from "../src/daemon-log.js";
import type { HostLinks } from "../src/hosts/host-links.js";
import { HostMembers, hostMemberResult } from "../src/hosts/host-members.js";
import type { HostService } from "../src/hosts/host-service.js";
import type { RemoteAgentService } from "../src/hosts/remote-agents.js";

const member = (fields: Partial<GroupMemberView>): GroupMemberView => ({
  variant: "1",
  delegator: "claude",
  agentType: "claude",
  model: null,
  state: "running",
  agentId: "ag-1",
  worktreeId: "wt-1",
  worktreePath: "/srv/pu/projects/app-1/.pu/worktrees/group-1",
  branch: "pu/group-1",
  startedAt: "2026-11-26T08:00:00.000Z",
  seconds: 12,
  exitCode: null,
  reason: null,
  gate: null,
  diff: null,
  output: null,
  outputSource: null,
  judgeRank: null,
  ...fields,
});

const view = (phase: string, members: GroupMemberView[], failureReasons: string[] = []): GroupView => ({
  groupId: "g-host",
  project: "/srv/pu/projects/app-1",
  kind: "multi_prompt",
  phase,
  ticketId: "",
  stepName: "member 1 of g-here",
  createdAt: "2026-11-26T08:00:00.000Z",
  finishedAt: null,
  aggregate: "collect",
  join: "all",
  quorum: 1,
  gate: null,
  expectedTotal: 1,
  pendingLaunches: 0,
  members,
  winner: null,
  reasons: null,
  failureReasons,
  picked: null,
  aggregatedText: null,
});

describe("hostMemberResult", () => {
  it("a member done on its host: its output, gate and diff stat as the host recorded them", () => {
    const done = member({ state: "done", output: "output of 1", outputSource: "file", gate: { passed: true, exitCode: 0, attempts: 2 }, diff: { files: 2, insertions: 5, deletions: 1 } });
    expect(hostMemberResult(view("complete", [done]))).toEqual({
      state: "done",
      reason: null,
      exit_code: null,
      gate: { passed: true, exit_code: 0, attempts: 2 },
      output: "output of 1",
      output_source: "file",
      diff: { files: 2, insertions: 5, deletions: 1 },
    });
  });

  it("a member that failed there keeps its reason; a group that ended without the member's result is failed, or cancelled, with the host's reason", () => {
    const failed = member({ state: "failed", reason: "the agent exited (code 3) before its work was done", exitCode: 3 });
    expect(hostMemberResult(view("failed", [failed]))).toMatchObject({ state: "failed", reason: "the agent exited (code 3) before its work was done", exit_code: 3, output: "", output_source: "none" });
    expect(hostMemberResult(view("failed", [member({ state: "running" })], ["pu could not finish the group: disk full"]))).toMatchObject({ state: "failed", reason: "pu could not finish the group: disk full" });
    expect(hostMemberResult(view("cancelled", [member({ state: "pending" })]))).toMatchObject({ state: "cancelled", reason: "its group on the host ended cancelled" });
  });
});

describe("HostMembers.follow, while its owner's budget is spent", () => {
  /**
   * Two members of one group, each a group of one on host `box` (agents ag-a and ag-b), followed at
   * once; the host reports them running until `ended` is set. What was forwarded to it and logged is recorded.
   */
  function twoMembersOnAHost() {
    const forwarded: { type: string; fields: Record<string, unknown> }[] = [];
    const logged: { event: string; fields?: Record<string, unknown> }[] = [];
    let ended = false;
    const agentOf = (groupId: string) => (groupId === "g-a" ? "ag-a" : "ag-b");
    const links = {
      request: async (_host: unknown, type: string, fields: Record<string, unknown>) => {
        if (type === "group_status") return view(ended ? "complete" : "running", [member({ agentId: agentOf(fields.groupId as string), state: ended ? "done" : "running" })]);
        if (type === "usage") return { rows: (fields.agentIds as string[]).map((key) => ({ key, label: key, agents: 1, input: 10, output: 5, cacheRead: 0, cacheWrite: 0, reasoning: 0, calls: 1, costUsd: null })) };
        throw new Error(`unexpected request ${type}`);
      },
    } as unknown as HostLinks;
    const remote = {
      placedAgent: () => ({ host: "box", projectRoot: "/p" }),
      placedWorktree: () => ({ host: "box", projectRoot: "/p" }),
      forward: async (_placed: unknown, type: string, fields: Record<string, unknown>) => {
        forwarded.push({ type, fields });
        ended = true;
        return {};
      },
    } as unknown as RemoteAgentService;
    const hosts = { get: async (name: string) => ({ name, root: "/srv/pu" }) } as unknown as HostService;
    const log = { event: (event: string, fields?: Record<string, unknown>) => logged.push({ event, ...(fields ? { fields } : {}) }), close: () => undefined } as DaemonLog;
    return { members: new HostMembers(hosts, links, remote, log), forwarded, logged };
  }

  it("one look at the group's total serves all its members on hosts; each is held at what it spent, and the hold is logged", async () => {
    const { members, forwarded, logged } = twoMembersOnAHost();
    let looks = 0;
    const watch = () => ({
      signal: new AbortController().signal,
      over: () => false,
      seen: async () => undefined,
      spent: async () => {
        looks += 1;
        return "max 1000 tokens, spent 1200 tokens";
      },
      owner: "group:g-1",
    });
    const views = await Promise.all([members.follow("/p", "box", "g-a", "main", watch()), members.follow("/p", "box", "g-b", "main", watch())]);
    expect(views.map((v) => v?.phase)).toEqual(["complete", "complete"]);
    // Without the shared look, each member asks on its own (2).
    expect(looks).toBe(1);
    expect(forwarded.map((f) => f.fields).sort((a, b) => String(a.agentId).localeCompare(String(b.agentId)))).toEqual([
      { agentId: "ag-a", maxTokens: 15 },
      { agentId: "ag-b", maxTokens: 15 },
    ]);
    expect(forwarded.every((f) => f.type === "budget")).toBe(true);
    expect(logged.filter((l) => l.event === "host_agent_held").map((l) => l.fields)).toEqual([
      expect.objectContaining({ host: "box", agentId: expect.stringMatching(/^ag-[ab]$/), maxTokens: 15, reason: "its owner's budget is spent (max 1000 tokens, spent 1200 tokens)" }),
      expect.objectContaining({ host: "box", agentId: expect.stringMatching(/^ag-[ab]$/), maxTokens: 15 }),
    ]);
  });

  it("members of different owners are looked at each for their own; an owner under its budget holds nobody", async () => {
    const { members, forwarded, logged } = twoMembersOnAHost();
    const looked: string[] = [];
    const controller = new AbortController();
    let polls = 0;
    const watch = (owner: string) => ({
      signal: controller.signal,
      // Followed for one look each, then let go.
      over: () => polls++ >= 4,
      seen: async () => undefined,
      spent: async () => {
        looked.push(owner);
        return undefined;
      },
      owner,
    });
    const views = await Promise.all([members.follow("/p", "box", "g-a", "main", watch("group:g-1")), members.follow("/p", "box", "g-b", "main", watch("plan:s-1"))]);
    expect(views).toEqual([undefined, undefined]);
    expect(looked.sort()).toEqual(["group:g-1", "plan:s-1"]);
    expect(forwarded).toEqual([]);
    expect(logged).toEqual([]);
  });
});
