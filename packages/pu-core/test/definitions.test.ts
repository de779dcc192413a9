import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  deleteDefinition,
  definitionPath,
  listDefinitions,
  loadDefinition,
  parseDefinition,
  saveDefinition,
  stringifyDefinition,
  swarmWorktreeNames,
  type DefinitionKind,
} from "../src/definitions.js";
import { isPuError, type ErrorCode } from "../src/errors.js";
import { definitionDirName } from "../src/paths.js";

const FIXTURES = fileURLToPath(new URL("./fixtures/defs/", import.meta.url));

let tmp: string;
let projectRoot: string;
let home: string;

beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), "pu-defs-"));
  projectRoot = join(tmp, "project");
  home = join(tmp, "home");
  mkdirSync(join(projectRoot, ".pu"), { recursive: true });
  mkdirSync(home, { recursive: true });
});

afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

function fixtureText(kind: DefinitionKind, name: string): string {
  return readFileSync(definitionPath(kind, name, FIXTURES), "utf8");
}

function writeDef(scopeDirectory: string, kind: DefinitionKind, name: string, text: string): string {
  const path = definitionPath(kind, name, scopeDirectory);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

async function puErrorOf(work: () => unknown): Promise<{ code: ErrorCode; message: string }> {
  try {
    await work();
  } catch (error) {
    if (isPuError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a PuError");
}

/** The CONFIG_ERROR message for a trigger file `x.yaml` with this text. */
async function triggerError(text: string): Promise<string> {
  const error = await puErrorOf(() => parseDefinition("trigger", text, ".pu/triggers/x.yaml"));
  expect(error.code).toBe("CONFIG_ERROR");
  return error.message;
}

describe("trigger schema", () => {
  it("parses the DESIGN example with defaults filled in", () => {
    const { parsed, warnings } = parseDefinition("trigger", fixtureText("trigger", "test-and-review"), "test-and-review.yaml");
    expect(warnings).toEqual([]);
    expect(parsed).toEqual({
      name: "test-and-review",
      on: "agent_idle",
      sequence: [
        { inject: "Now write tests for what you changed.", max_retries: 0 },
        {
          inject: "Run the suite and fix failures.",
          gate: { run: "pnpm test", expect_exit: 0, timeout_seconds: 600 },
          max_retries: 3,
        },
      ],
      variables: { SUITE: "unit" },
    });
  });

  it("defaults the name to the file name and turns scalar variables into text", () => {
    const { parsed } = parseDefinition("trigger", "on: pre_push\nsequence: [{ gate: { run: make } }]\nvariables: { N: 3, ON: true }\n", "/h/triggers/ship.yaml");
    expect(parsed.name).toBe("ship");
    expect(parsed.variables).toEqual({ N: "3", ON: "true" });
  });

  it("names the file and the field in every error", async () => {
    expect(await triggerError("on: agent_idle\nsequence: []\n")).toBe(
      ".pu/triggers/x.yaml: sequence: must have at least one action",
    );
    expect(await triggerError("on: agent_idle\n")).toBe(".pu/triggers/x.yaml: sequence: is required");
    expect(await triggerError("on: sometimes\nsequence: [{ inject: hi }]\n")).toMatch(/^\.pu\/triggers\/x\.yaml: on: /);
    expect(await triggerError("on: agent_idle\nsequence: [{ inject: hi }, { max_retries: 2 }]\n")).toBe(
      ".pu/triggers/x.yaml: sequence[1]: an action needs `inject`, `gate` or both",
    );
    expect(await triggerError("on: agent_idle\nsequence: [{ gate: { expect_exit: 1 } }]\n")).toBe(
      ".pu/triggers/x.yaml: sequence[0].gate.run: is required",
    );
    expect(await triggerError("name: y\non: agent_idle\nsequence: [{ inject: hi }]\n")).toMatch(
      /^\.pu\/triggers\/x\.yaml: name: "y" does not match the file name "x"/,
    );
    expect(await triggerError("on: [agent_idle\n")).toMatch(/^\.pu\/triggers\/x\.yaml: not valid YAML/);
    expect(await triggerError("- just a list\n")).toMatch(/^\.pu\/triggers\/x\.yaml: must be a YAML mapping/);
  });

  it("warns about unknown top-level keys instead of failing", () => {
    const { parsed, warnings } = parseDefinition("trigger", "on: pre_commit\nsequence: [{ inject: hi }]\npriority: high\n", "t/x.yaml");
    expect(parsed.on).toBe("pre_commit");
    expect(warnings).toEqual(['t/x.yaml: unknown key "priority" ignored']);
  });
});

describe("agent definition schema", () => {
  it("parses a valid definition with agentType defaulting to claude", () => {
    const { parsed } = parseDefinition("agent", fixtureText("agent", "reviewer"), "reviewer.yaml");
    expect(parsed).toEqual({
      name: "reviewer",
      description: "Reviews code using the review template",
      agentType: "claude",
      template: "review",
      tags: ["review", "quality"],
    });
  });
  it("rejects template and inlinePrompt together, naming the field", async () => {
    const error = await puErrorOf(() => parseDefinition("agent", "template: a\ninlinePrompt: b\n", "agents/x.yaml"));
    expect(error).toEqual({ code: "CONFIG_ERROR", message: "agents/x.yaml: inlinePrompt: set `template` or `inlinePrompt`, not both" });
    const tags = await puErrorOf(() => parseDefinition("agent", "tags: review\n", "agents/x.yaml"));
    expect(tags.message).toMatch(/^agents\/x\.yaml: tags: /);
  });
});

describe("swarm schema", () => {
  it("parses a valid swarm and expands worktree names from 1", () => {
    const { parsed } = parseDefinition("swarm", fixtureText("swarm", "review-squad"), "review-squad.yaml");
    expect(parsed.worktreeTemplate).toBe("{name}-{index}");
    expect(parsed.roster).toEqual([
      { agentDef: "reviewer", role: "lead", quantity: 1 },
      { agentDef: "reviewer", role: "second-opinion", quantity: 2 },
    ]);
    expect(swarmWorktreeNames(parsed)).toEqual(["review-squad-1", "review-squad-2"]);
  });
  it("rejects a zero worktree count and a zero quantity, naming the fields", async () => {
    const error = await puErrorOf(() =>
      parseDefinition("swarm", "worktreeCount: 0\nroster: [{ agentDef: a, role: r, quantity: 0 }]\n", "swarms/s.yaml"),
    );
    expect(error.code).toBe("CONFIG_ERROR");
    expect(error.message).toMatch(/^swarms\/s\.yaml: worktreeCount: .*; roster\[0\]\.quantity: /);
  });
  it("needs {index} in the template when there are several worktrees", async () => {
    const error = await puErrorOf(() =>
      parseDefinition("swarm", "worktreeCount: 2\nworktreeTemplate: same\nroster: [{ agentDef: a, role: r }]\n", "swarms/s.yaml"),
    );
    expect(error.message).toBe("swarms/s.yaml: worktreeTemplate: must contain {index} so each worktree gets its own name");
  });
});

describe("schedule schema", () => {
  it("parses a valid schedule with enabled defaulting to true", () => {
    const { parsed } = parseDefinition("schedule", fixtureText("schedule", "nightly"), "nightly.yaml");
    expect(parsed).toMatchObject({
      name: "nightly",
      enabled: true,
      recurrence: "weekdays",
      timeZone: "Europe/Berlin",
      trigger: { agentDef: "reviewer" },
      worktree: "nightly-review",
      vars: { FOCUS: "security", BRANCH: "main" },
    });
  });
  it("accepts a cron expression and an inline prompt with an agent type", () => {
    const text = 'recurrence: "0 2 * * 1-5"\nstartAt: 2025-01-01T00:00:00Z\ntrigger: { inlinePrompt: "Update deps", agent: codex }\nroot: true\n';
    expect(parseDefinition("schedule", text, "s.yaml").parsed.trigger).toEqual({ inlinePrompt: "Update deps", agent: "codex" });
  });
  it("names the file and field for each invalid case", async () => {
    const base = "startAt: 2025-01-01T00:00:00Z\n";
    const cases: [string, RegExp][] = [
      [`recurrence: "61 * * * *"\n${base}trigger: { swarm: s }\n`, /^schedules\/s\.yaml: recurrence: recurrence "61 \* \* \* \*" is neither/],
      [`recurrence: daily\nstartAt: tomorrow\ntrigger: { swarm: s }\n`, /^schedules\/s\.yaml: startAt: must be an ISO 8601 date-time$/],
      [`recurrence: daily\n${base}timeZone: Mars/Olympus\ntrigger: { swarm: s }\n`, /^schedules\/s\.yaml: timeZone: must be an IANA time zone/],
      [`recurrence: daily\n${base}trigger: { swarm: s, agentDef: a }\n`, /^schedules\/s\.yaml: trigger: needs exactly one of agentDef, swarm or inlinePrompt \(got agentDef and swarm\)$/],
      [`recurrence: daily\n${base}trigger: {}\n`, /^schedules\/s\.yaml: trigger: needs exactly one of/],
      [`recurrence: daily\n${base}trigger: { agentDef: a }\nroot: true\nworktree: w\n`, /^schedules\/s\.yaml: worktree: set `root: true` or `worktree`, not both$/],
      [`recurrence: daily\n${base}trigger: { agentDef: a, agent: codex }\n`, /^schedules\/s\.yaml: trigger\.agent: only applies to an inlinePrompt$/],
    ];
    for (const [text, expected] of cases) {
      const error = await puErrorOf(() => parseDefinition("schedule", text, "schedules/s.yaml"));
      expect(error.code).toBe("CONFIG_ERROR");
      expect(error.message).toMatch(expected);
    }
  });
});

describe("template definitions", () => {
  it("parse frontmatter, body and variables; a mismatched name is an error", async () => {
    const { parsed } = parseDefinition("template", fixtureText("template", "review"), "review.md");
    expect(parsed).toMatchObject({ name: "review", agent: "claude", variables: ["BRANCH", "BASE", "FOCUS"] });
    const error = await puErrorOf(() => parseDefinition("template", fixtureText("template", "review"), "templates/other.md"));
    expect(error.message).toMatch(/^templates\/other\.md: name: "review" does not match/);
  });
});

describe("loading and listing across scopes", () => {
  it("a local definition hides a global one of the same name; globals fill in the rest", async () => {
    writeDef(home, "trigger", "shared", "description: global copy\non: agent_idle\nsequence: [{ inject: global }]\n");
    writeDef(home, "trigger", "only-global", "on: pre_push\nsequence: [{ gate: { run: make } }]\n");
    writeDef(join(projectRoot, ".pu"), "trigger", "shared", "description: local copy\non: agent_idle\nsequence: [{ inject: local }]\n");

    const loaded = await loadDefinition("trigger", "shared", { projectRoot, home });
    expect(loaded.scope).toBe("local");
    expect(loaded.path).toBe(join(projectRoot, ".pu", "triggers", "shared.yaml"));
    expect(loaded.parsed.sequence[0]?.inject).toBe("local");
    expect(loaded.content).toContain("local copy");

    expect((await loadDefinition("trigger", "only-global", { projectRoot, home })).scope).toBe("global");
    // Outside a project only global definitions exist.
    expect((await loadDefinition("trigger", "shared", { home })).parsed.sequence[0]?.inject).toBe("global");

    const listed = await listDefinitions("trigger", { projectRoot, home });
    expect(listed.map((d) => [d.name, d.scope, d.description])).toEqual([
      ["shared", "local", "local copy"],
      ["only-global", "global", undefined],
    ]);
  });

  it("lists unparsable files with their error and skips other files", async () => {
    cpSync(join(FIXTURES, "agents"), join(projectRoot, ".pu", "agents"), { recursive: true });
    writeDef(join(projectRoot, ".pu"), "agent", "broken", "template: a\ninlinePrompt: b\n");
    writeFileSync(join(projectRoot, ".pu", "agents", "notes.txt"), "not a definition");
    writeFileSync(join(projectRoot, ".pu", "agents", ".hidden.yaml"), "agentType: x\n");

    const listed = await listDefinitions("agent", { projectRoot, home });
    expect(listed.map((d) => d.name)).toEqual(["broken", "reviewer"]);
    expect(listed[0]?.error).toBe(".pu/agents/broken.yaml: inlinePrompt: set `template` or `inlinePrompt`, not both");
    expect(listed[1]?.error).toBeUndefined();
    expect(await listDefinitions("swarm", { projectRoot, home })).toEqual([]);
  });

  it("NOT_FOUND when neither scope has it; CONFIG_ERROR for an invalid local file even if a global one is fine", async () => {
    const missing = await puErrorOf(() => loadDefinition("swarm", "nope", { projectRoot, home }));
    expect(missing.code).toBe("NOT_FOUND");
    expect(missing.message).toContain('no swarm named "nope"');

    writeDef(home, "agent", "dup", "agentType: codex\n");
    writeDef(join(projectRoot, ".pu"), "agent", "dup", "agentType: [oops]\n");
    const invalid = await puErrorOf(() => loadDefinition("agent", "dup", { projectRoot, home }));
    expect(invalid.code).toBe("CONFIG_ERROR");
    expect(invalid.message).toMatch(/^\.pu\/agents\/dup\.yaml: agentType: /);
  });

  it("rejects unsafe names before touching the file system", async () => {
    for (const name of ["../escape", ".hidden", "a/b", "a\\b", "nul\0", ""]) {
      expect((await puErrorOf(() => loadDefinition("trigger", name, { projectRoot, home }))).code).toBe("INVALID_ARGUMENT");
    }
  });
});

describe("saving and deleting", () => {
  it("saves valid content where loadDefinition finds it", async () => {
    const saved = await saveDefinition("swarm", "review-squad", fixtureText("swarm", "review-squad"), {
      scope: "local",
      projectRoot,
      home,
    });
    expect(saved.path).toBe(join(projectRoot, ".pu", definitionDirName("swarm"), "review-squad.yaml"));
    const loaded = await loadDefinition("swarm", "review-squad", { projectRoot, home });
    expect(loaded.content).toBe(fixtureText("swarm", "review-squad"));
    expect(loaded.parsed.worktreeCount).toBe(2);
  });

  it("never writes invalid content, and does not clobber the existing file", async () => {
    const good = "on: agent_idle\nsequence: [{ inject: keep me }]\n";
    const path = writeDef(home, "trigger", "t", good);
    const error = await puErrorOf(() =>
      saveDefinition("trigger", "t", "on: agent_idle\nsequence: []\n", { scope: "global", home, overwrite: true }),
    );
    expect(error.message).toBe(`${path}: sequence: must have at least one action`);
    expect(readFileSync(path, "utf8")).toBe(good);

    await puErrorOf(() => saveDefinition("trigger", "new", "sequence: [{ inject: x }]\n", { scope: "global", home }));
    expect(existsSync(definitionPath("trigger", "new", home))).toBe(false);
  });

  it("refuses to overwrite unless asked, then replaces atomically without leftovers", async () => {
    const first = "on: agent_idle\nsequence: [{ inject: one }]\n";
    const second = "on: agent_idle\nsequence: [{ inject: two }]\n";
    await saveDefinition("trigger", "t", first, { scope: "local", projectRoot, home });
    const refused = await puErrorOf(() => saveDefinition("trigger", "t", second, { scope: "local", projectRoot, home }));
    expect(refused.code).toBe("INVALID_ARGUMENT");
    expect(refused.message).toContain("already exists");
    expect((await loadDefinition("trigger", "t", { projectRoot, home })).content).toBe(first);

    await saveDefinition("trigger", "t", second, { scope: "local", projectRoot, home, overwrite: true });
    expect((await loadDefinition("trigger", "t", { projectRoot, home })).content).toBe(second);
    expect(readdirSync(join(projectRoot, ".pu", "triggers"))).toEqual(["t.yaml"]);
  });

  it("saving into the local scope without a project is refused", async () => {
    const error = await puErrorOf(() => saveDefinition("trigger", "t", "on: agent_idle\nsequence: [{ inject: x }]\n", { scope: "local", home }));
    expect(error.code).toBe("NOT_INITIALIZED");
  });

  it("round-trips a parsed value through stringifyDefinition", async () => {
    const { parsed } = parseDefinition("schedule", fixtureText("schedule", "nightly"), "nightly.yaml");
    const updated = { ...parsed, lastRun: "2025-06-03T00:00:00.000Z", nextRun: "2025-06-04T00:00:00.000Z" };
    await saveDefinition("schedule", "nightly", stringifyDefinition("schedule", updated), { scope: "global", home });
    expect((await loadDefinition("schedule", "nightly", { home })).parsed).toEqual(updated);

    const template = parseDefinition("template", fixtureText("template", "review"), "review.md").parsed;
    const text = stringifyDefinition("template", template);
    expect(parseDefinition("template", text, "review.md").parsed).toEqual(template);
  });

  it("deletes the local copy first, then the global one, then reports NOT_FOUND", async () => {
    writeDef(home, "agent", "a", "agentType: codex\n");
    writeDef(join(projectRoot, ".pu"), "agent", "a", "agentType: claude\n");
    expect((await deleteDefinition("agent", "a", { projectRoot, home })).scope).toBe("local");
    expect((await loadDefinition("agent", "a", { projectRoot, home })).parsed.agentType).toBe("codex");
    expect((await puErrorOf(() => deleteDefinition("agent", "a", { scope: "local", projectRoot, home }))).code).toBe("NOT_FOUND");
    expect((await deleteDefinition("agent", "a", { projectRoot, home })).scope).toBe("global");
    expect((await puErrorOf(() => deleteDefinition("agent", "a", { projectRoot, home }))).code).toBe("NOT_FOUND");
  });
});
