// The work queue's pure parts: the shipped workflow collection, the `queue` config section,
// and project workflows as trust items.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../src/config.js";
import { DEFAULT_WORKFLOWS } from "../src/default-workflows.js";
import { projectTrustItems } from "../src/trust.js";
import { parseWorkflow } from "../src/workflow.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the default workflow collection", () => {
  it("ships FEAT, FIX, TASK and SPIKE, each valid, as docs/queue.md lists them", () => {
    const steps = Object.fromEntries(
      Object.entries(DEFAULT_WORKFLOWS).map(([type, text]) => {
        const { workflow, warnings } = parseWorkflow(text, `built-in:${type}`);
        expect(warnings).toEqual([]);
        return [type, workflow.steps.map((s) => `${s.name}${s.review ? `(${s.review} review)` : ""}${s.artifact ? `[${s.artifact}]` : ""}`)];
      }),
    );
    expect(steps).toEqual({
      FEAT: ["plan(plan review)[PLAN.md]", "implement", "test"],
      FIX: ["reproduce", "fix"],
      TASK: ["do"],
      SPIKE: ["explore"],
    });
  });

  it("puts the ticket into every first prompt and asks for the output file where a summary is due", () => {
    for (const [type, text] of Object.entries(DEFAULT_WORKFLOWS)) {
      const { workflow } = parseWorkflow(text, type);
      expect(workflow.steps[0]?.prompt).toContain("{{TICKET_ID}}: {{TITLE}}\n\n{{DESCRIPTION}}");
      expect(workflow.steps.at(-1)?.prompt).toContain("{{OUTPUT_FILE}}");
    }
  });
});

describe("queue settings in config.yaml", () => {
  it("reads maxParallel, maxPerProject and hungAfterMinutes", () => {
    const config = parseConfig("queue:\n  maxParallel: 3\n  maxPerProject: 2\n  hungAfterMinutes: 15\n", "c.yaml");
    expect(config.queue).toEqual({ maxParallel: 3, maxPerProject: 2, hungAfterMinutes: 15 });
    expect(parseConfig("", "c.yaml").queue).toBeUndefined();
  });

  it("names the file and the field of a bad value", () => {
    expect(() => parseConfig("queue:\n  maxParallel: 0\n", "/p/.pu/config.yaml")).toThrow(/\/p\/\.pu\/config\.yaml: queue\.maxParallel/);
  });
});

describe("project workflows need trust", () => {
  it("lists each valid project workflow (top level and in a collection) with what it runs and types", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "pu-queue-trust-"));
    dirs.push(root);
    const workflows = path.join(root, ".pu", "workflows");
    mkdirSync(path.join(workflows, "strict"), { recursive: true });
    writeFileSync(path.join(workflows, "FEAT.yaml"), `steps:\n  - name: build\n    prompt: go\n    gate: { run: "pnpm test" }\n`);
    writeFileSync(path.join(workflows, "strict", "FIX.yaml"), `steps:\n  - name: fix\n    prompt: go\n    gate: { run: "make check" }\n`);
    writeFileSync(path.join(workflows, "TASK.yaml"), `steps:\n  - name: do\n    prompt: no gate here\n`);
    writeFileSync(path.join(workflows, "BAD.yaml"), `steps: nope\n`);
    const items = await projectTrustItems({ projectRoot: root, home: path.join(root, "home") });
    expect(items.map((i) => [i.key, i.runs])).toEqual([
      ["workflows/FEAT.yaml", 'workflow workflows/FEAT.yaml runs gate "pnpm test"; types build: "go"'],
      ["workflows/TASK.yaml", 'workflow workflows/TASK.yaml types do: "no gate here"'],
      ["workflows/strict/FIX.yaml", 'workflow workflows/strict/FIX.yaml runs gate "make check"; types fix: "go"'],
    ]);
  });
});
