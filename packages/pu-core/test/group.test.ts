import { describe, expect, it } from "vitest";
import { gateWinner, joinReady, parseDelegator, parseJudgeVerdict, planGroupMembers, variantSlug, type GroupRecord, type MemberResult } from "../src/group.js";
import { parseWorkflow } from "../src/workflow.js";

function result(state: MemberResult["state"], extra: Partial<MemberResult> = {}): MemberResult {
  return { state, output: "", output_source: "none", seconds: 1, finished_at: "2026-11-23T10:00:00.000Z", ...extra };
}

function group(members: string[], outputs: Record<string, MemberResult>, join: "all" | "first" = "all"): GroupRecord {
  return {
    group_id: "g-000001",
    ticket_id: "",
    step_name: "",
    step_type: "multi_model",
    agent_ids: [],
    phase: "running",
    project: "/p",
    created_at: "2026-11-23T10:00:00.000Z",
    settings: { aggregate: "gate", join, quorum: 1, max_retries: 0 },
    members: Object.fromEntries(members.map((m) => [m, { delegator_name: m, prompt: "p", attempts: 1, agent_id: `ag-${m}` }])),
    individual_outputs: outputs,
  };
}

describe("planGroupMembers", () => {
  it("names variants as the seed does: the delegator, the prompt index, {delegator}:{prompt_idx}", () => {
    expect(planGroupMembers({ kind: "multi_model", delegators: ["claude", "codex:gpt-5"], sharedPrompt: "fix it", prompts: [] })).toEqual([
      { delegator_name: "claude", prompt: "fix it", variant_key: "claude" },
      { delegator_name: "codex:gpt-5", prompt: "fix it", variant_key: "codex:gpt-5" },
    ]);
    expect(planGroupMembers({ kind: "multi_prompt", delegators: ["claude"], sharedPrompt: "task", prompts: ["a", "b"] }).map((m) => [m.variant_key, m.prompt])).toEqual([
      ["0", "task\n\na"],
      ["1", "task\n\nb"],
    ]);
    expect(planGroupMembers({ kind: "matrixed", delegators: ["a", "b"], sharedPrompt: "", prompts: ["x", "y"] }).map((m) => m.variant_key)).toEqual(["a:0", "a:1", "b:0", "b:1"]);
  });

  it("refuses groups that do not make sense, saying why", () => {
    expect(() => planGroupMembers({ kind: "multi_model", delegators: ["claude"], sharedPrompt: "x", prompts: [] })).toThrow(/at least two agents/);
    expect(() => planGroupMembers({ kind: "multi_model", delegators: ["a", "a"], sharedPrompt: "x", prompts: [] })).toThrow(/listed twice/);
    expect(() => planGroupMembers({ kind: "multi_prompt", delegators: ["a", "b"], sharedPrompt: "x", prompts: ["1", "2"] })).toThrow(/matrixed/);
    expect(() => planGroupMembers({ kind: "multi_prompt", delegators: ["a"], sharedPrompt: "x", prompts: ["1"] })).toThrow(/two prompts/);
    expect(() => parseDelegator("Bad Name")).toThrow(/does not name an agent type/);
    expect(parseDelegator("codex:gpt-5")).toEqual({ agentType: "codex", model: "gpt-5" });
  });
});

describe("the join and the winner", () => {
  it("join all waits for every member; join first fires at the first done", () => {
    expect(joinReady(group(["a", "b"], { a: result("done") }))).toBe(false);
    expect(joinReady(group(["a", "b"], { a: result("done"), b: result("failed") }))).toBe(true);
    expect(joinReady(group(["a", "b"], { a: result("failed") }, "first"))).toBe(false);
    expect(joinReady(group(["a", "b"], { b: result("done") }, "first"))).toBe(true);
  });

  it("gate: the passing member with the smallest change, ties to the first finished", () => {
    const pass = { passed: true, exit_code: 0, attempts: 1 };
    const g = group(["a", "b", "c", "d"], {
      a: result("done", { gate: pass, diff: { files: 1, insertions: 9, deletions: 0 } }),
      b: result("done", { gate: pass, diff: { files: 1, insertions: 2, deletions: 1 }, finished_at: "2026-11-23T10:00:05.000Z" }),
      c: result("done", { gate: pass, diff: { files: 2, insertions: 1, deletions: 2 }, finished_at: "2026-11-23T10:00:03.000Z" }),
      d: result("failed", { gate: { passed: false, exit_code: 1, attempts: 2 }, diff: { files: 0, insertions: 0, deletions: 0 } }),
    });
    expect(gateWinner(g)).toBe("c");
    expect(gateWinner(group(["a"], { a: result("failed") }))).toBeUndefined();
  });
});

describe("parseJudgeVerdict", () => {
  it("accepts a verdict naming a finished member, and says what is wrong otherwise", () => {
    expect(parseJudgeVerdict('{"winner":"a","ranking":["a","b"],"reasons":"a is smaller"}', ["a", "b"], ["a", "b", "c"]).winner).toBe("a");
    expect(() => parseJudgeVerdict("not json", ["a"], ["a"])).toThrow(/not JSON/);
    expect(() => parseJudgeVerdict('{"winner":"a"}', ["a"], ["a"])).toThrow(/ranking/);
    expect(() => parseJudgeVerdict('{"winner":"c","ranking":["c"],"reasons":"x"}', ["a"], ["a", "c"])).toThrow(/"c" is not a member that finished/);
    expect(() => parseJudgeVerdict('{"winner":"a","ranking":["a","zz"],"reasons":"x"}', ["a"], ["a"])).toThrow(/unknown members: zz/);
  });

  it("makes file-safe names of variant keys", () => {
    expect(variantSlug("codex:gpt-5:1")).toBe("codex-gpt-5-1");
  });
});

describe("group workflow steps", () => {
  const parse = (steps: string) => () => parseWorkflow(`steps:\n${steps}`, "W.yaml");

  it("accepts a group step and refuses group keys where they mean nothing", () => {
    const w = parseWorkflow("steps:\n  - name: fan\n    type: multi_model\n    agents: [a, b]\n    prompt: go\n    aggregate: gate\n    gate: { run: 'true' }\n", "W.yaml");
    expect(w.workflow.steps[0]).toMatchObject({ type: "multi_model", agents: ["a", "b"], aggregate: "gate" });
    expect(parse("  - name: x\n    prompt: go\n    agents: [a, b]\n")).toThrow(/W.yaml: steps\[0\]: agents needs a group step/);
    expect(parse("  - name: x\n    type: multi_model\n    agents: [a, b]\n    prompt: go\n    aggregate: gate\n")).toThrow(/aggregate: gate needs a gate/);
    expect(parse("  - name: x\n    type: multi_prompt\n    prompt: go\n")).toThrow(/W.yaml: steps\[0\]: multi_prompt needs at least two prompts/);
  });
});
