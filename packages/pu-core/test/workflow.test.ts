import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import { parseWorkflow, stepAgent } from "../src/workflow.js";

const FEAT = `description: A feature, planned, built and tested
finish: merge
steps:
  - name: plan
    prompt: "Plan {{TICKET_ID}}: {{TITLE}}. Write the plan to {{OUTPUT_FILE}}."
    artifact: PLAN.md
    review: plan
  - name: implement
    prompt: "Implement the plan for {{TICKET_ID}}."
    agent: codex
    gate: { run: "pnpm test" }
    max_retries: 3
    timeout_minutes: 30
  - name: compare
    prompt: "Try it three ways."
    type: multi_model
    agents: [claude, codex]
    read_only: true
`;

describe("workflows", () => {
  it("reads the steps with their agent, artifact, gate, review, timeout and group fields", () => {
    const { workflow, warnings } = parseWorkflow(FEAT, ".pu/workflows/FEAT.yaml");
    expect(warnings).toEqual([]);
    expect(workflow).toMatchObject({ launch_mode: "default", finish: "merge" });
    expect(workflow.steps.map((s) => s.name)).toEqual(["plan", "implement", "compare"]);
    expect(workflow.steps[0]).toMatchObject({ artifact: "PLAN.md", review: "plan", max_retries: 2 });
    expect(workflow.steps[1]).toMatchObject({ agent: "codex", gate: { run: "pnpm test", expect_exit: 0 }, max_retries: 3, timeout_minutes: 30 });
    expect(workflow.steps[2]).toMatchObject({ type: "multi_model", agents: ["claude", "codex"], read_only: true });
  });

  it("names the file and the field of a mistake; unknown keys are warnings", () => {
    const fail = (text: string) => {
      try {
        parseWorkflow(text, "W.yaml");
      } catch (error) {
        if (isPuError(error) && error.code === "CONFIG_ERROR") return error.message;
        throw error;
      }
      throw new Error("expected a CONFIG_ERROR");
    };
    expect(fail(FEAT.replace("review: plan", "review: later"))).toMatch(/^W\.yaml: steps\[0\]\.review: /);
    expect(fail("steps: []\n")).toBe("W.yaml: steps: a workflow needs at least one step");
    expect(fail(FEAT.replace("name: implement", "name: plan"))).toBe('W.yaml: steps: step name "plan" is used twice');
    // An artifact is a file the step leaves in its worktree: nothing outside counts as done.
    for (const outside of ["/etc/passwd", "../../etc/passwd", "docs/../../x", "~/notes.md"]) {
      expect(fail(FEAT.replace("artifact: PLAN.md", `artifact: "${outside}"`))).toBe("W.yaml: steps[0].artifact: must be a path inside the worktree (relative, no '..')");
    }
    expect(parseWorkflow(FEAT.replace("artifact: PLAN.md", "artifact: docs/..plan.md"), "W.yaml").workflow.steps[0]?.artifact).toBe("docs/..plan.md");
    // A group step's members placed on hosts: checked places; not with shared worktrees, not on a one-agent step.
    const spread = FEAT.replace("    read_only: true\n", "    on: [local, gpu-box]\n");
    expect(parseWorkflow(spread, "W.yaml").workflow.steps[2]?.on).toEqual(["local", "gpu-box"]);
    expect(fail(spread.replace("on: [local, gpu-box]", "on: [local, local]"))).toBe("W.yaml: steps[2]: on: local is listed twice");
    expect(fail(spread.replace("on: [local, gpu-box]", "on: [local]\n    read_only: true"))).toMatch(/^W\.yaml: steps\[2\]: on: places members in worktrees of their own/);
    expect(fail(FEAT.replace("    review: plan\n", "    on: [gpu-box]\n"))).toBe("W.yaml: steps[0]: on needs a group step (type: multi_model, multi_prompt or matrixed)");
    const { warnings } = parseWorkflow(`${FEAT}colour: blue\n`.replace("    artifact: PLAN.md", "    artefact: PLAN.md"), "W.yaml");
    expect(warnings).toEqual(['W.yaml: unknown key "colour" ignored', 'W.yaml: steps[0]: unknown key "artefact" ignored']);
  });

  it("a step's agent: its own, else the ticket's, else the project's preferred tool, else the default agent", () => {
    expect(stepAgent({ agent: "codex" }, { agent: "claude" }, "opencode", "terminal")).toBe("codex");
    expect(stepAgent({}, { agent: "claude" }, "opencode", "terminal")).toBe("claude");
    expect(stepAgent({}, {}, "opencode", "terminal")).toBe("opencode");
    expect(stepAgent({}, {}, null, "terminal")).toBe("terminal");
  });
});
