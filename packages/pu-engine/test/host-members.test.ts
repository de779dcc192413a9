// How a member that ran on a host is recorded here, from the host's view of its one-member group.
import { describe, expect, it } from "vitest";
import type { GroupMemberView, GroupView } from "@pu/ipc/protocol";
import { hostMemberResult } from "../src/hosts/host-members.js";

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
