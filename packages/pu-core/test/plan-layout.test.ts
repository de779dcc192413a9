import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  explorerIdFromFileName,
  isExplorerId,
  isPlanSessionId,
  isTaskId,
  newPlanSessionId,
  planBranch,
  planLayout,
  taskIdFromFileName,
} from "../src/plan-layout.js";

describe("plan layout", () => {
  it("lays a session out as the seed does, under .pu/plans/<id>/", () => {
    const layout = planLayout("/p", "20260201-abc123");
    const dir = "/p/.pu/plans/20260201-abc123";
    expect(layout.dir).toBe(dir);
    expect(layout.session).toBe(join(dir, "session.json"));
    expect(layout.context).toBe(join(dir, "context.json"));
    expect(layout.design).toBe(join(dir, "design.md"));
    expect(layout.overview).toBe(join(dir, "exploration/overview.md"));
    expect(layout.exploration("exp-3")).toBe(join(dir, "exploration/exp-3.md"));
    expect(layout.hints).toBe(join(dir, "exploration/hints.json"));
    expect(layout.proposedTask("2")).toBe(join(dir, "proposed/2.json"));
    expect(layout.task("2")).toBe(join(dir, "tasks/2.json"));
    expect(layout.verifyTask).toBe(join(dir, "tasks/verify.json"));
    expect(layout.report("2")).toBe(join(dir, "reports/2.md"));
    expect(layout.verdict(2)).toBe(join(dir, "verification/iteration-2.json"));
    expect(planBranch("20260201-abc123")).toBe("pu/plan-20260201-abc123");
  });

  it("refuses ids that would leave the session directory or break a branch name", () => {
    for (const bad of ["", "..", "../x", "a/b", "A", "-x", "x-", "a.b", "x".repeat(65), "a\0b"]) {
      expect(isPlanSessionId(bad), bad).toBe(false);
      expect(() => planLayout("/p", bad), bad).toThrow(/plan session id .* is not valid/);
    }
    const layout = planLayout("/p", "s1");
    for (const bad of ["", ".", "..", "../x", "a/b", ".hidden", "a.json", "x".repeat(65)]) {
      expect(isTaskId(bad), bad).toBe(false);
      expect(() => layout.task(bad), bad).toThrow(/task id .* is not valid/);
      expect(() => layout.proposedTask(bad), bad).toThrow(/task id/);
    }
    for (const bad of ["exp-0", "exp-", "exp-1/..", "../overview", "Overview"]) {
      expect(isExplorerId(bad), bad).toBe(false);
      expect(() => layout.exploration(bad), bad).toThrow(/explorer id/);
    }
    expect(() => layout.verdict(0)).toThrow(/iteration/);
  });

  it("new session ids are valid, sort by day and differ", () => {
    const ids = new Set(Array.from({ length: 50 }, () => newPlanSessionId(new Date("2026-03-04T05:06:07Z"))));
    expect(ids.size).toBe(50);
    for (const id of ids) {
      expect(isPlanSessionId(id)).toBe(true);
      expect(id).toMatch(/^20260304-[a-z0-9]{6}$/);
    }
  });

  it("maps directory entries back to ids, ignoring anything else", () => {
    expect(explorerIdFromFileName("exp-2.md")).toBe("exp-2");
    expect(explorerIdFromFileName("overview.md")).toBe("overview");
    expect(explorerIdFromFileName("hints.json")).toBeUndefined();
    expect(explorerIdFromFileName("notes.md")).toBeUndefined();
    expect(taskIdFromFileName("12.json")).toBe("12");
    expect(taskIdFromFileName(".12.json.tmp")).toBeUndefined();
    expect(taskIdFromFileName("a.b.json")).toBeUndefined();
  });
});
