import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { renderTemplate } from "../src/template.js";
import { planLayout } from "../src/plan-layout.js";
import {
  builtinPlanTemplate,
  loadPlanTemplate,
  PLAN_ROLES,
  PLAN_TEMPLATE_VARIABLES,
  planRoleEnvironment,
  planTemplateName,
} from "../src/plan-roles.js";

let root: string;
let home: string;

beforeEach(() => {
  const base = mkdtempSync(join(tmpdir(), "pu-plan-roles-"));
  root = join(base, "project");
  home = join(base, "home");
  mkdirSync(join(root, ".pu", "templates"), { recursive: true });
  mkdirSync(join(home, "templates"), { recursive: true });
});

afterEach(() => {
  rmSync(join(root, ".."), { recursive: true, force: true });
});

describe("shipped role templates", () => {
  it.each(PLAN_ROLES)("plan-%s parses, uses exactly its documented variables, and renders completely", (role) => {
    const template = builtinPlanTemplate(role);
    expect(template.name).toBe(planTemplateName(role));
    expect(template.description).toBeTruthy();
    expect([...template.variables].sort()).toEqual([...PLAN_TEMPLATE_VARIABLES[role]].sort());
    const vars = Object.fromEntries(template.variables.map((name) => [name, `<${name}>`]));
    const { text, missing } = renderTemplate(template.body, vars);
    expect(missing).toEqual([]);
    expect(text).toContain("<GOAL>");
    expect(text).toContain(`PU_PLAN_ROLE\` (\`${role}\`)`);
  });

  it("state each role's file contract", () => {
    expect(builtinPlanTemplate("explorer").body).toContain("exploration/hints.json");
    const planner = builtinPlanTemplate("planner").body;
    expect(planner).toContain("proposed/<id>.json");
    expect(planner).toContain('"blockedBy"');
    expect(builtinPlanTemplate("worker").body).toContain('pu plan check "npm test"');
    expect(builtinPlanTemplate("verifier").body).toContain('{"passed": false, "failures": [{"task": "2"');
  });
});

describe("loading a role template", () => {
  it("falls back to the shipped one", async () => {
    const loaded = await loadPlanTemplate("worker", { projectRoot: root, home });
    expect(loaded.source).toBe("builtin");
    expect(loaded.template.body).toBe(builtinPlanTemplate("worker").body);
  });

  it("a project template of the same name wins over a global one, which wins over the shipped one", async () => {
    writeFileSync(join(home, "templates", "plan-worker.md"), "Global worker for {{TASK_ID}}\n");
    let loaded = await loadPlanTemplate("worker", { projectRoot: root, home });
    expect(loaded.source).toBe("global");
    expect(loaded.template.body).toBe("Global worker for {{TASK_ID}}\n");

    writeFileSync(join(root, ".pu", "templates", "plan-worker.md"), "---\ndescription: ours\n---\nLocal {{TASK_ID}}\n");
    loaded = await loadPlanTemplate("worker", { projectRoot: root, home });
    expect(loaded.source).toBe("local");
    expect(loaded.template.variables).toEqual(["TASK_ID"]);
    // Only that role is overridden.
    expect((await loadPlanTemplate("planner", { projectRoot: root, home })).source).toBe("builtin");
  });

  it("a broken override is reported, not replaced by the shipped template", async () => {
    writeFileSync(join(root, ".pu", "templates", "plan-verifier.md"), "---\nname: [unclosed\n---\nbody\n");
    await expect(loadPlanTemplate("verifier", { projectRoot: root, home })).rejects.toMatchObject({
      code: "CONFIG_ERROR",
      message: expect.stringContaining("plan-verifier.md"),
    });
  });
});

describe("role environment", () => {
  const layout = planLayout("/p", "20260201-abc123");
  const dir = "/p/.pu/plans/20260201-abc123";

  it("gives every role PU_PLAN_DIR, PU_PLAN_ROLE and its PU_OUTPUT_FILE", () => {
    expect(planRoleEnvironment(layout, { role: "explorer", explorerId: "exp-2" })).toEqual({
      PU_PLAN_DIR: dir,
      PU_PLAN_ROLE: "explorer",
      PU_OUTPUT_FILE: `${dir}/exploration/exp-2.md`,
      PU_EXPLORER_ID: "exp-2",
    });
    expect(planRoleEnvironment(layout, { role: "planner" })).toEqual({
      PU_PLAN_DIR: dir,
      PU_PLAN_ROLE: "planner",
      PU_OUTPUT_FILE: `${dir}/design.md`,
    });
    expect(planRoleEnvironment(layout, { role: "worker", taskId: "3" })).toEqual({
      PU_PLAN_DIR: dir,
      PU_PLAN_ROLE: "worker",
      PU_OUTPUT_FILE: `${dir}/reports/3.md`,
      PU_TASK_ID: "3",
    });
    expect(planRoleEnvironment(layout, { role: "verifier", iteration: 2 })).toEqual({
      PU_PLAN_DIR: dir,
      PU_PLAN_ROLE: "verifier",
      PU_OUTPUT_FILE: `${dir}/verification/iteration-2.json`,
    });
  });

  it("refuses ids that would point the output elsewhere", () => {
    expect(() => planRoleEnvironment(layout, { role: "worker", taskId: "../../x" })).toThrow(/task id/);
    expect(() => planRoleEnvironment(layout, { role: "explorer", explorerId: "../x" })).toThrow(/explorer id/);
  });
});
