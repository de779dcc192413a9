import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import {
  canEnterPhase,
  checkEvidence,
  checkPhaseTransition,
  newContext,
  newSession,
  parseContext,
  parseExplorerHints,
  parseSession,
  parseTask,
  parseTaskProposal,
  parseVerifierVerdict,
  serializeContext,
  serializeSession,
  serializeTask,
} from "../src/plan-files.js";

const fixtures = join(import.meta.dirname, "fixtures", "plans");
const read = (name: string) => readFileSync(join(fixtures, name), "utf8");

function failure(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (isPuError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a PuError");
}

function edited(name: string, edit: (raw: Record<string, any>) => void): string {
  const raw = JSON.parse(read(name));
  edit(raw);
  return JSON.stringify(raw);
}

describe("session.json (v5.0)", () => {
  it("reads the seed's example with every field and writes it back unchanged", () => {
    const session = parseSession(read("session.json"), "session.json");
    expect(session.options).toEqual({ max_workers: 0, max_iterations: 5, skip_verify: false, plan_only: false, auto_mode: false });
    expect(session.plan.approved_at).toBeNull();
    expect(session.evidence_log[1]).toMatchObject({ type: "test_result", command: "npm test", exit_code: 1, duration_ms: 5120 });
    const text = serializeSession(session);
    expect(JSON.parse(text)).toEqual(JSON.parse(read("session.json")));
    // Key order as the seed writes it, nulls kept (the seed writes `approved_at: null`).
    expect(Object.keys(JSON.parse(text))).toEqual(Object.keys(JSON.parse(read("session.json"))));
    expect(text.endsWith("}\n")).toBe(true);
  });

  it("keeps keys it does not know, at every level", () => {
    const text = edited("session.json", (raw) => {
      raw.future = { a: 1 };
      raw.plan.approved_by = "alice";
      raw.options.new_option = true;
      raw.evidence_log[0].extra = "kept";
    });
    const round = JSON.parse(serializeSession(parseSession(text, "session.json")));
    expect(round.future).toEqual({ a: 1 });
    expect(round.plan.approved_by).toBe("alice");
    expect(round.options.new_option).toBe(true);
    expect(round.evidence_log[0].extra).toBe("kept");
  });

  it("names the file and every bad field", () => {
    const text = edited("session.json", (raw) => {
      raw.phase = "RUNNING";
      raw.options.max_workers = -1;
      delete raw.goal;
    });
    const { code, message } = failure(() => parseSession(text, "/p/.pu/plans/x/session.json"));
    expect(code).toBe("INVALID_STATE");
    expect(message).toMatch(/^\/p\/\.pu\/plans\/x\/session\.json: /);
    expect(message).toContain("goal: is required");
    expect(message).toContain("phase: ");
    expect(message).toContain("options.max_workers: ");
  });

  it("refuses another version, a session id that could be a path, and broken JSON", () => {
    expect(failure(() => parseSession(edited("session.json", (r) => (r.version = "4.0")), "s")).message).toContain(
      'unsupported session version "4.0"',
    );
    expect(failure(() => parseSession(edited("session.json", (r) => (r.session_id = "../x")), "s")).message).toContain(
      "session_id: ",
    );
    expect(failure(() => parseSession("{ nope", "s.json")).message).toMatch(/^s\.json: not valid JSON/);
  });

  it("newSession starts in EXPLORATION with the seed's defaults and validates the options", () => {
    const now = new Date("2026-02-01T10:00:00.000Z");
    const session = newSession({ sessionId: "20260201-abc123", goal: "Add dark mode", options: { max_workers: 2 }, now });
    expect(session).toMatchObject({
      version: "5.0",
      phase: "EXPLORATION",
      exploration_stage: "not_started",
      iteration: 1,
      started_at: "2026-02-01T10:00:00.000Z",
      plan: { approved_at: null },
      options: { max_workers: 2, max_iterations: 5, skip_verify: false, plan_only: false, auto_mode: false },
      evidence_log: [],
      cancelled_at: null,
    });
    expect(parseSession(serializeSession(session), "s")).toEqual(session);
    expect(failure(() => newSession({ sessionId: "x", goal: "g", options: { max_iterations: 0 } })).code).toBe(
      "INVALID_ARGUMENT",
    );
  });
});

describe("context.json (v2.1)", () => {
  it("reads the seed's example and writes it back unchanged", () => {
    const context = parseContext(read("context.json"), "context.json");
    expect(context.expected_explorers).toEqual(["overview", "exp-1", "exp-2"]);
    expect(JSON.parse(serializeContext(context))).toEqual(JSON.parse(read("context.json")));
  });

  it("newContext expects the overview and nothing is complete", () => {
    const context = newContext();
    expect(context).toEqual({
      version: "2.1",
      expected_explorers: ["overview"],
      exploration_complete: false,
      explorers: [],
      key_files: [],
      patterns: [],
      constraints: [],
    });
    expect(parseContext(serializeContext(context), "c")).toEqual(context);
  });

  it("refuses an explorer id that is not overview or exp-N", () => {
    const text = edited("context.json", (raw) => (raw.explorers[0].id = "../../etc"));
    expect(failure(() => parseContext(text, "context.json")).message).toContain("explorers[0].id: ");
  });
});

describe("tasks/<id>.json", () => {
  it("reads the seed's example and writes it back unchanged, blockedBy spelled as the seed spells it", () => {
    const task = parseTask(read("tasks/1.json"), "tasks/1.json");
    expect(task.blockedBy).toEqual(["0"]);
    const text = serializeTask(task);
    expect(JSON.parse(text)).toEqual(JSON.parse(read("tasks/1.json")));
    expect(text).toContain('"blockedBy"');
    expect(parseTask(read("tasks/verify.json"), "tasks/verify.json").status).toBe("in_progress");
  });

  it("refuses another spelling of blockedBy instead of reading the task as unblocked", () => {
    const text = edited("tasks/1.json", (raw) => {
      raw.blocked_by = raw.blockedBy;
      delete raw.blockedBy;
    });
    const { code, message } = failure(() => parseTask(text, "tasks/1.json"));
    expect(code).toBe("INVALID_STATE");
    expect(message).toContain('blocked_by: is not read; spell it "blockedBy"');
  });

  it("refuses a status or complexity the seed does not have", () => {
    const text = edited("tasks/1.json", (raw) => {
      raw.status = "done";
      raw.complexity = "huge";
    });
    const { message } = failure(() => parseTask(text, "tasks/1.json"));
    expect(message).toContain("status: ");
    expect(message).toContain("complexity: ");
  });
});

describe("proposed/<id>.json", () => {
  it("fills what pu owns: status open, no evidence, no blockers, standard complexity", () => {
    const task = parseTaskProposal(JSON.stringify({ id: "a", subject: "Do A", criteria: ["A works"] }), "proposed/a.json");
    expect(task).toEqual({
      id: "a",
      subject: "Do A",
      description: "",
      status: "open",
      blockedBy: [],
      complexity: "standard",
      criteria: ["A works"],
      evidence: [],
    });
  });

  it("lists every problem: empty criteria, claimed evidence, a status, a path-like id", () => {
    const text = JSON.stringify({
      id: "../x",
      subject: "",
      status: "resolved",
      criteria: [],
      evidence: ["trust me"],
    });
    const { code, message } = failure(() => parseTaskProposal(text, "proposed/x.json"));
    expect(code).toBe("INVALID_ARGUMENT");
    for (const field of ["id: ", "subject: must not be empty", "status: ", "criteria: must list at least one", "evidence: must be empty"]) {
      expect(message).toContain(field);
    }
  });

  it("refuses a placement: where a worker runs is pu's to record (a restarted daemon follows it there)", () => {
    const text = JSON.stringify({ id: "a", subject: "Do A", criteria: ["A works"], placement: { host: "box", key: "a-1" } });
    expect(failure(() => parseTaskProposal(text, "proposed/a.json")).message).toContain("placement: must be left out: pu places workers");
  });
});

describe("a task placed on a host", () => {
  it("keeps its placement through a write and a read, and a task without one writes none", () => {
    const base = { id: "a", subject: "Do A", description: "", status: "in_progress", blockedBy: [], complexity: "standard", criteria: ["A works"], evidence: [] };
    const placed = parseTask(serializeTask(parseTask(JSON.stringify({ ...base, placement: { host: "box", key: "a-1f", group_id: "g-1", agent_id: "ag-1", worktree_id: "wt-1" } }), "tasks/a.json")), "tasks/a.json");
    expect(placed.placement).toEqual({ host: "box", key: "a-1f", group_id: "g-1", agent_id: "ag-1", worktree_id: "wt-1" });
    expect(serializeTask(parseTask(JSON.stringify(base), "tasks/a.json"))).not.toContain("placement");
  });
});

describe("what role agents write", () => {
  it("hints: [{id, hint}] with exp-N ids, each once", () => {
    expect(parseExplorerHints('[{"id":"exp-1","hint":"auth"},{"id":"exp-2","hint":"db"}]', "h")).toEqual([
      { id: "exp-1", hint: "auth" },
      { id: "exp-2", hint: "db" },
    ]);
    expect(parseExplorerHints("[]", "h")).toEqual([]);
    const { message } = failure(() =>
      parseExplorerHints('[{"id":"exp-1","hint":"a"},{"id":"exp-1","hint":"b"},{"id":"overview","hint":"c"},{"id":"x","hint":""}]', "hints.json"),
    );
    expect(message).toContain('[1].id: "exp-1" is listed twice');
    expect(message).toContain('[2].id: must be "exp-N"');
    expect(message).toContain("[3].id: ");
    expect(message).toContain("[3].hint: must not be empty");
  });

  it("verdict: {passed, failures: [{task, reason}]}, consistent", () => {
    expect(parseVerifierVerdict('{"passed": true}', "v")).toEqual({ passed: true, failures: [] });
    expect(parseVerifierVerdict('{"passed": false, "failures": [{"task": "2", "reason": "500"}]}', "v").failures).toEqual([
      { task: "2", reason: "500" },
    ]);
    expect(failure(() => parseVerifierVerdict('{"passed": false, "failures": []}', "v.json")).message).toBe(
      "v.json: failures: must name at least one {task, reason} when passed is false",
    );
    expect(failure(() => parseVerifierVerdict('{"passed": true, "failures": [{"task": "1", "reason": "x"}]}', "v")).message).toContain(
      "failures: must be empty when passed is true",
    );
    expect(failure(() => parseVerifierVerdict('{"passed": "yes"}', "v")).message).toContain("passed: ");
  });
});

describe("phases", () => {
  it("follow the seed's transitions, loop back from VERIFICATION, and never leave a final phase", () => {
    expect(canEnterPhase("EXPLORATION", "PLANNING")).toBe(true);
    expect(canEnterPhase("PLANNING", "EXECUTION")).toBe(true);
    expect(canEnterPhase("EXECUTION", "VERIFICATION")).toBe(true);
    expect(canEnterPhase("VERIFICATION", "EXECUTION")).toBe(true);
    expect(canEnterPhase("VERIFICATION", "COMPLETE")).toBe(true);
    expect(canEnterPhase("PLANNING", "CANCELLED")).toBe(true);
    expect(canEnterPhase("EXECUTION", "FAILED")).toBe(true);
    expect(canEnterPhase("EXPLORATION", "EXECUTION")).toBe(false);
    expect(canEnterPhase("COMPLETE", "CANCELLED")).toBe(false);
    expect(canEnterPhase("CANCELLED", "EXECUTION")).toBe(false);
    expect(failure(() => checkPhaseTransition("s1", "CANCELLED", "EXECUTION"))).toEqual({
      code: "INVALID_STATE",
      message: "plan s1 is CANCELLED and cannot become EXECUTION (it is finished)",
    });
    expect(failure(() => checkPhaseTransition("s1", "EXPLORATION", "EXECUTION")).message).toBe(
      "plan s1 is EXPLORATION and cannot become EXECUTION (EXPLORATION is followed by PLANNING, FAILED, CANCELLED)",
    );
  });
});

describe("evidence from a check pu ran", () => {
  it("records a failed command too, with its exit code, duration and output tail", () => {
    const output = `${"x".repeat(5000)}\n  1 failing\n`;
    const { entry, line } = checkEvidence({
      taskId: "2",
      agentId: "ag-abcd1234",
      command: "npm test",
      exitCode: 1,
      durationMs: 5120,
      output,
      type: "test_result",
      now: new Date("2026-01-08T12:16:00Z"),
    });
    expect(entry).toMatchObject({
      timestamp: "2026-01-08T12:16:00.000Z",
      type: "test_result",
      agent_id: "ag-abcd1234",
      task_id: "2",
      status: "failed",
      summary: "npm test: exit 1 in 5.1s (1 failing)",
      exit_code: 1,
      duration_ms: 5120,
    });
    expect(entry.output_tail).toHaveLength(2000);
    expect(output.endsWith(entry.output_tail as string)).toBe(true);
    expect(line).toBe("FAILED: npm test: exit 1 in 5.1s (1 failing)");
    // It is a valid log entry: a session holding it round-trips.
    const session = newSession({ sessionId: "s1", goal: "g" });
    session.evidence_log.push(entry);
    expect(parseSession(serializeSession(session), "s").evidence_log).toEqual([entry]);
  });
});
