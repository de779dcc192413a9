// A plan session's files as the daemon reads them while it changes them: `pu plan status`
// asked while the planner's tasks are being written must see all of them or none, never a
// plan with some of its tasks (the change writes one task file after another). A dropped task
// loses its file, and task files count as a plan only once their acceptance is written. A file
// that cannot be read is named with what is wrong (told from other errors) and never written over.
import { mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newContext, newSession, type Task } from "@pu/core/plan-files";
import { createPlan, layoutOf, readPlan, readSession, readTasks, tasksAccepted, unreadableFile, updatePlan } from "../src/orchestration/plans/plan-store.js";

const SESSION_ID = "20261127-150000-store";

function task(id: string): Task {
  return { id, subject: `make ${id}`, description: "", status: "open", blockedBy: [], complexity: "standard", criteria: [`${id} exists`], evidence: [] };
}

describe("plan store", () => {
  let root: string;

  beforeEach(() => {
    root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "pu-plan-store-")));
  });
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it("never shows a plan in the middle of a change: every read sees all of its new tasks or none", async () => {
    const layout = layoutOf(root, SESSION_ID);
    await createPlan(root, layout, { session: newSession({ sessionId: SESSION_ID, goal: "many tasks" }), context: newContext(), tasks: [] });
    const ids = Array.from({ length: 40 }, (_, i) => `t${String(i).padStart(2, "0")}`);

    let writing = true;
    const seen: number[] = [];
    const readers = Array.from({ length: 4 }, async () => {
      while (writing) {
        const [plan, tasks] = await Promise.all([readPlan(layout), readTasks(layout)]);
        seen.push(plan.tasks.length, tasks.length);
      }
    });
    // Reads are queued from the start, so some of them come before the change and some after.
    await new Promise((resolve) => setImmediate(resolve));
    const { files } = await updatePlan(layout, (plan) => {
      plan.tasks = ids.map(task);
      plan.session.phase = "PLANNING";
    });
    writing = false;
    await Promise.all(readers);

    expect(files.tasks).toHaveLength(ids.length);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((count) => count !== 0 && count !== ids.length)).toEqual([]);
    const after = await readPlan(layout);
    expect(after.session.phase).toBe("PLANNING");
    expect(after.tasks.map((t) => t.id)).toEqual(ids);
  });

  it("a task the change drops loses its file; the tasks count as a plan only once their acceptance is written", async () => {
    const layout = layoutOf(root, SESSION_ID);
    await createPlan(root, layout, { session: newSession({ sessionId: SESSION_ID, goal: "two tasks" }), context: newContext(), tasks: [task("a"), task("b")] });
    expect(tasksAccepted(await readPlan(layout))).toBe(false);
    await updatePlan(layout, (plan) => {
      plan.tasks = plan.tasks.filter((t) => t.id !== "b");
      plan.session.evidence_log.push({ timestamp: new Date().toISOString(), type: "plan_accepted", status: "passed" });
    });
    expect(readdirSync(layout.tasksDir)).toEqual(["a.json"]);
    expect(tasksAccepted(await readPlan(layout))).toBe(true);
  });

  it("a change that throws writes nothing, and the reads after it go on", async () => {
    const layout = layoutOf(root, SESSION_ID);
    await createPlan(root, layout, { session: newSession({ sessionId: SESSION_ID, goal: "one task" }), context: newContext(), tasks: [task("a")] });
    await expect(
      updatePlan(layout, (plan) => {
        plan.tasks.push(task("b"));
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect((await readPlan(layout)).tasks.map((t) => t.id)).toEqual(["a"]);
  });

  it("a corrupt file is an error naming it and what is wrong, told apart from others, and no change writes over it", async () => {
    const layout = layoutOf(root, SESSION_ID);
    await createPlan(root, layout, { session: newSession({ sessionId: SESSION_ID, goal: "one task" }), context: newContext(), tasks: [task("a")] });
    const files = [
      { file: layout.session, text: "garbage {", reason: /^not valid JSON/ },
      { file: layout.context, text: "{}", reason: /^version: / },
      { file: layout.task("a"), text: '{"id": "a"}', reason: /subject: is required/ },
    ];
    for (const { file, text, reason } of files) {
      const good = readFileSync(file, "utf8");
      writeFileSync(file, text);
      const error: unknown = await readPlan(layout).catch((e: unknown) => e);
      expect(unreadableFile(error)).toEqual({ file, reason: expect.stringMatching(reason) });
      expect((error as Error).message).toBe(`${file}: ${unreadableFile(error)?.reason}`);
      let changed = false;
      const refused: unknown = await updatePlan(layout, (plan) => {
        changed = true;
        plan.session.phase = "CANCELLED";
      }).catch((e: unknown) => e);
      expect(unreadableFile(refused)?.file).toBe(file);
      expect(changed).toBe(false);
      expect(readFileSync(file, "utf8")).toBe(text);
      writeFileSync(file, good);
    }
    // Not corrupt: a session that does not exist is not found, and other errors are not "unreadable".
    const missing: unknown = await readSession(layoutOf(root, "20261127-150001-none")).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: "NOT_FOUND" });
    expect(unreadableFile(missing)).toBeUndefined();
    expect(unreadableFile(new Error("x"))).toBeUndefined();
    expect((await readPlan(layout)).tasks.map((t) => t.id)).toEqual(["a"]);
  });
});
