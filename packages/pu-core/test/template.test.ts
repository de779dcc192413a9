import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import { parseTemplate, renderShellCommand, renderTemplate, templateVariables } from "../src/template.js";

const fixture = readFileSync(new URL("./fixtures/defs/templates/review.md", import.meta.url), "utf8");

function configErrorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (isPuError(error) && error.code === "CONFIG_ERROR") return error.message;
    throw error;
  }
  throw new Error("expected a CONFIG_ERROR");
}

describe("templateVariables", () => {
  it("lists each placeholder once, in order, with or without spaces, skipping escaped ones", () => {
    expect(templateVariables("{{A}} {{ B }} {{A}} \\{{C}} {{not a var}} {D}")).toEqual(["A", "B"]);
  });
});

describe("renderTemplate", () => {
  it("substitutes known variables and reports, but keeps, missing ones", () => {
    const out = renderTemplate("Fix {{ISSUE}} on {{ BRANCH }}, then {{ISSUE}} again for {{OWNER}}.", {
      ISSUE: "#42",
      BRANCH: "main",
    });
    expect(out.text).toBe("Fix #42 on main, then #42 again for {{OWNER}}.");
    expect(out.missing).toEqual(["OWNER"]);
  });
  it("turns \\{{ into a literal {{ and does not substitute inside it", () => {
    const out = renderTemplate("use \\{{NAME}} syntax, name is {{NAME}}", { NAME: "x" });
    expect(out).toEqual({ text: "use {{NAME}} syntax, name is x", missing: [] });
  });
  it("inserts values verbatim, even ones that look like placeholders or replacement patterns", () => {
    expect(renderTemplate("{{A}}", { A: "{{B}} $& $1" }).text).toBe("{{B}} $& $1");
    expect(renderTemplate("{{toString}}", {}).missing).toEqual(["toString"]);
  });
});

describe("parseTemplate", () => {
  it("splits frontmatter from the body and lists the body's variables", () => {
    const parsed = parseTemplate(fixture, "templates/review.md");
    expect(parsed.frontmatter).toEqual({ name: "review", description: "Review a change before it merges", agent: "claude" });
    expect(parsed.body.startsWith("Review the changes on branch {{BRANCH}}")).toBe(true);
    expect(parsed.variables).toEqual(["BRANCH", "BASE", "FOCUS"]);
    expect(parsed.warnings).toEqual([]);
  });
  it("treats a file without frontmatter as all body", () => {
    const parsed = parseTemplate("Just do {{TASK}}.\n---\nnot frontmatter\n", "t.md");
    expect(parsed.frontmatter).toEqual({});
    expect(parsed.body).toBe("Just do {{TASK}}.\n---\nnot frontmatter\n");
  });
  it("warns about unknown frontmatter keys instead of failing", () => {
    const parsed = parseTemplate("---\ndescription: d\ncolour: blue\n---\nbody\n", "t.md");
    expect(parsed.frontmatter).toEqual({ description: "d" });
    expect(parsed.warnings).toEqual(['t.md: unknown key "colour" ignored']);
  });
  it("names the file and field when frontmatter is wrong", () => {
    expect(configErrorOf(() => parseTemplate("---\nagent: [a, b]\n---\nbody", "x/t.md"))).toMatch(/^x\/t\.md: agent: /);
    expect(configErrorOf(() => parseTemplate("---\nagent: claude\nbody", "x/t.md"))).toMatch(/^x\/t\.md: .*never closed/);
    expect(configErrorOf(() => parseTemplate("---\n: : :\n  - [\n---\nbody", "x/t.md"))).toMatch(/^x\/t\.md: .*YAML/);
  });
});

describe("renderShellCommand", () => {
  const hostile = `a b; touch pwned # $(touch x) \`touch y\` 'q' "q" \\`;

  it("turns each placeholder into a reference to PU_VAR_<NAME> suited to its quoting, and passes every value in env", () => {
    const out = renderShellCommand(`run {{S}} "in {{S}}" 'in {{S}}' \\{{S}} {{MISSING}}`, { S: hostile, OTHER: "o" });
    expect(out.command).toBe(`run "\${PU_VAR_S}" "in \${PU_VAR_S}" 'in '"\${PU_VAR_S}"'' {{S}} {{MISSING}}`);
    expect(out.env).toEqual({ PU_VAR_S: hostile, PU_VAR_OTHER: "o" });
    expect(out.missing).toEqual(["MISSING"]);
  });

  it("a shell running the command sees each value as exactly one word, and runs nothing from it", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pu-shell-vars-"));
    try {
      const { command, env } = renderShellCommand(`printf '<%s>' {{S}} "[{{S}}]" '({{S}})'`, { S: hostile });
      const out = execFileSync("/bin/sh", ["-c", command], { cwd: dir, env: { ...process.env, ...env }, encoding: "utf8" });
      expect(out).toBe(`<${hostile}><[${hostile}]><(${hostile})>`);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
