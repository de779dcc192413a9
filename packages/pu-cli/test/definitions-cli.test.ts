// `pu trigger|prompt|agent|swarm|schedule list|show|create|delete`, `pu swarm run` and
// `pu schedule enable|disable`: the real bin against a real daemon (temp PU_HOME, temp git repo).
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPuWith, startCliProject, type CliProject } from "./cli-project.js";

let p: CliProject;
beforeAll(async () => {
  p = await startCliProject("pu-cli-defs-");
}, 60_000);
afterAll(async () => {
  await p?.stop();
}, 60_000);

interface KindCase {
  noun: string;
  dir: string;
  ext: string;
  name: string;
  valid: string;
  /** The same definition with another description, to show --force replaced it. */
  changed: string;
  invalid: string;
  /** The field the daemon must name when rejecting `invalid`. */
  field: string;
  summary: RegExp;
}

const KINDS: KindCase[] = [
  {
    noun: "trigger",
    dir: "triggers",
    ext: ".yaml",
    name: "review-loop",
    valid: "description: tests first\non: agent_idle\nsequence:\n  - inject: write tests\n  - gate: { run: 'pnpm test' }\n    max_retries: 2\n",
    changed: "description: tests later\non: agent_idle\nsequence:\n  - inject: write tests\n",
    invalid: "on: agent_idle\nsequence:\n  - gate: { run: '' }\n",
    field: "sequence[0].gate.run",
    summary: /event: agent_idle[\s\S]*1\. inject "write tests"[\s\S]*2\. gate `pnpm test` \(expect exit 0, timeout 600s, up to 2 retries\)/,
  },
  {
    noun: "prompt",
    dir: "templates",
    ext: ".md",
    name: "review",
    valid: "---\ndescription: review an area\n---\nReview {{AREA}} and list {{RISKS}}.\n",
    changed: "---\ndescription: review again\n---\nReview {{AREA}}.\n",
    invalid: "---\ndescription: [not, text]\n---\nbody\n",
    field: "description",
    summary: /variables: AREA, RISKS/,
  },
  {
    noun: "agent",
    dir: "agents",
    ext: ".yaml",
    name: "shell",
    valid: "description: a plain shell\nagentType: terminal\ntags: [tools]\n",
    changed: "description: another shell\nagentType: terminal\n",
    invalid: "agentType: terminal\ntemplate: review\ninlinePrompt: hello\n",
    field: "inlinePrompt",
    summary: /agent type: terminal[\s\S]*prompt: none[\s\S]*tags: tools/,
  },
  {
    noun: "swarm",
    dir: "swarms",
    ext: ".yaml",
    name: "pair",
    valid: "description: two shells\nworktreeCount: 2\nroster:\n  - { agentDef: shell, role: worker }\n",
    changed: "description: one shell\nworktreeCount: 1\nroster:\n  - { agentDef: shell, role: worker }\n",
    invalid: "worktreeCount: 2\nworktreeTemplate: same-name\nroster:\n  - { agentDef: shell, role: worker }\n",
    field: "worktreeTemplate",
    summary: /worktrees: pair-1, pair-2[\s\S]*1 × worker \(agent definition shell\)/,
  },
  {
    noun: "schedule",
    dir: "schedules",
    ext: ".yaml",
    name: "nightly",
    valid: "description: every night\nrecurrence: daily\nstartAt: '2031-01-01T03:00:00Z'\ntrigger: { agentDef: shell }\nenabled: false\n",
    changed: "description: every night, later\nrecurrence: daily\nstartAt: '2031-01-01T04:00:00Z'\ntrigger: { agentDef: shell }\nenabled: false\n",
    invalid: "recurrence: daily\nstartAt: '2031-01-01T03:00:00Z'\ntrigger: { agentDef: shell, swarm: pair }\n",
    field: "trigger",
    summary: /enabled: no[\s\S]*recurrence: daily from 2031-01-01T03:00:00Z[\s\S]*starts: agent definition shell in a new worktree/,
  },
];

const oneLine = (stderr: string) => {
  const lines = stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

describe.each(KINDS)("pu $noun", (k) => {
  const file = () => path.join(p.repo, ".pu", k.dir, `${k.name}${k.ext}`);

  it("rejects invalid content naming the file and the field, and writes nothing", async () => {
    const r = await p.run([k.noun, "create", k.name, "-"], { input: k.invalid });
    expect(r.code).toBe(1);
    const line = oneLine(r.stderr);
    expect(line).toContain(`.pu/${k.dir}/${k.name}${k.ext}`);
    expect(line).toContain(`${k.field}:`);
    expect(existsSync(file())).toBe(false);
  });

  it("creates from a file, refuses to overwrite without --force, replaces with it", async () => {
    const source = path.join(p.dir, `source-${k.noun}${k.ext}`);
    writeFileSync(source, k.valid);
    const created = await p.pu(k.noun, "create", k.name, "--file", source);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    expect(created.stdout).toBe(`saved ${k.noun} ${k.name} (local) to .pu/${k.dir}/${k.name}${k.ext}\n`);
    expect(readFileSync(file(), "utf8")).toBe(k.valid);

    const again = await p.run([k.noun, "create", k.name, "-"], { input: k.changed });
    expect(again.code).toBe(2);
    expect(oneLine(again.stderr)).toMatch(/already exists; pass --force to replace it/);
    expect(readFileSync(file(), "utf8")).toBe(k.valid);

    const forced = await p.run([k.noun, "create", k.name, "-", "--force", "--json"], { input: k.changed });
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toEqual({ path: file(), scope: "local", warnings: [] });
    expect(readFileSync(file(), "utf8")).toBe(k.changed);
    // Back to the first version for the tests below.
    expect((await p.pu(k.noun, "create", k.name, "--file", source, "--force")).code).toBe(0);
  });

  it("lists it with its scope and description", async () => {
    const text = await p.pu(k.noun, "list");
    expect(text.code).toBe(0);
    const row = text.stdout.split("\n").find((l) => l.startsWith(`${k.name} `));
    expect(row).toMatch(/\blocal\b/);
    if (k.noun !== "schedule") expect(row).toMatch(new RegExp(`\\s${/description: ([^\n]+)/.exec(k.valid)![1]}$`));
    const json = JSON.parse((await p.pu(k.noun, "list", "--json")).stdout) as { definitions: { name: string; scope: string }[] };
    expect(json.definitions).toContainEqual(expect.objectContaining({ name: k.name, scope: "local", path: file() }));
  });

  it("shows the file and a summary", async () => {
    const r = await p.pu(k.noun, "show", k.name);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`# ${file()} (local)\n${k.valid}`);
    expect(r.stdout).toMatch(k.summary);
    const json = JSON.parse((await p.pu(k.noun, "show", k.name, "--json")).stdout) as { content: string; scope: string };
    expect(json).toMatchObject({ content: k.valid, scope: "local", path: file() });
  });

  it("deletes it; then it is not found (exit 3)", async () => {
    const r = await p.pu(k.noun, "delete", k.name);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`deleted ${k.noun} ${k.name} (.pu/${k.dir}/${k.name}${k.ext})\n`);
    expect(existsSync(file())).toBe(false);
    const missing = await p.pu(k.noun, "show", k.name);
    expect(missing.code).toBe(3);
    expect(oneLine(missing.stderr)).toBe(
      `pu: no ${k.noun} named ${k.name} (looked in .pu/${k.dir} and ${p.home}/${k.dir}); see \`pu ${k.noun} list\``,
    );
    expect((await p.pu(k.noun, "delete", k.name)).code).toBe(3);
  });
});

describe("local and global definitions", () => {
  const trigger = (description: string) => `description: ${description}\non: agent_idle\nsequence:\n  - inject: hi\n`;

  it("a project's definition hides the global one of the same name", async () => {
    expect((await p.run(["trigger", "create", "shared", "-", "--global"], { input: trigger("from home") })).code).toBe(0);
    expect(existsSync(path.join(p.home, "triggers", "shared.yaml"))).toBe(true);
    expect((await p.run(["trigger", "create", "shared", "-"], { input: trigger("from the project") })).code).toBe(0);

    const listed = JSON.parse((await p.pu("trigger", "list", "--json")).stdout) as { definitions: { name: string; scope: string; description: string }[] };
    expect(listed.definitions.filter((d) => d.name === "shared")).toEqual([
      expect.objectContaining({ scope: "local", description: "from the project" }),
    ]);
    expect((await p.pu("trigger", "show", "shared")).stdout).toContain("description: from the project");

    expect((await p.pu("trigger", "delete", "shared")).code).toBe(0);
    const after = await p.pu("trigger", "list");
    expect(after.stdout).toMatch(/^shared\s+global\s+from home$/m);

    // Outside any project only the global ones are there.
    const outside = await p.run(["trigger", "list"], { cwd: p.dir });
    expect(outside.code).toBe(0);
    expect(outside.stdout).toMatch(/^shared\s+global\s+from home$/m);

    expect((await p.pu("trigger", "delete", "shared", "--global")).code).toBe(0);
    expect(existsSync(path.join(p.home, "triggers", "shared.yaml"))).toBe(false);
    expect((await p.pu("trigger", "delete", "shared", "--global")).code).toBe(3);
  });

  it("lists a file that does not validate with the reason", async () => {
    writeFileSync(path.join(p.repo, ".pu", "triggers", "broken.yaml"), "on: never\nsequence: []\n");
    const r = await p.pu("trigger", "list");
    expect(r.stdout).toMatch(/^broken\s+local\s+invalid: \.pu\/triggers\/broken\.yaml: on: /m);
    rmSync(path.join(p.repo, ".pu", "triggers", "broken.yaml"));
  });
});

describe("prompt create", () => {
  it("takes the text from --body", async () => {
    const r = await p.pu("prompt", "create", "fix", "--body", "Fix {{BUG}} in {{ AREA }}");
    expect(r.code).toBe(0);
    expect(readFileSync(path.join(p.repo, ".pu", "templates", "fix.md"), "utf8")).toBe("Fix {{BUG}} in {{ AREA }}");
    expect((await p.pu("prompt", "show", "fix")).stdout).toContain("variables: BUG, AREA (pass them with --var NAME=VALUE)");
  });

  it("wants exactly one source", async () => {
    const none = await p.pu("prompt", "create", "x");
    expect(none.code).toBe(2);
    expect(oneLine(none.stderr)).toContain("--file PATH, --body TEXT or `-` (stdin)");
    const both = await p.run(["prompt", "create", "x", "--body", "a", "-"], { input: "b" });
    expect(both.code).toBe(2);
    expect(existsSync(path.join(p.repo, ".pu", "templates", "x.md"))).toBe(false);
  });
});

describe("invalid names", () => {
  it("are usage errors before any daemon is contacted", async () => {
    const home = path.join(realpathSync(mkdtempSync(path.join(tmpdir(), "pu-cli-names-"))), "home");
    try {
      for (const args of [
        ["trigger", "show", "../x"],
        ["prompt", "create", ".hidden", "--body", "x"],
        ["agent", "delete", ""],
        ["swarm", "run", "a/b"],
        ["schedule", "enable", ".."],
        ["trigger", "assign", "ag-12345678", "../../etc/passwd"],
      ]) {
        const r = await runPuWith(args, { cwd: p.repo, env: { PU_HOME: home } });
        expect(r.code, args.join(" ")).toBe(2);
        expect(oneLine(r.stderr)).toMatch(/^pu: invalid \w+ name: /);
      }
      expect(existsSync(home)).toBe(false);
    } finally {
      rmSync(path.dirname(home), { recursive: true, force: true });
    }
  });
});

describe("pu swarm run", () => {
  beforeAll(async () => {
    expect((await p.run(["agent", "create", "sh", "-"], { input: "agentType: terminal\n" })).code).toBe(0);
  });

  it("prints a line per agent started and exits 0", async () => {
    const swarm = "worktreeCount: 2\nroster:\n  - { agentDef: sh, role: worker }\n";
    expect((await p.run(["swarm", "create", "duo", "-"], { input: swarm })).code).toBe(0);
    const r = await p.pu("swarm", "run", "duo");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^spawned ag-[a-z0-9]{8} \(worker\) in wt-[a-z0-9]{8}$/);
    expect(lines[1]).toMatch(/^spawned ag-[a-z0-9]{8} \(worker\) in wt-[a-z0-9]{8}$/);
    expect(lines[2]).toBe("swarm duo: 2 spawned in 2 worktrees");
  });

  it("reports what failed, keeps what started, and exits 1", async () => {
    const swarm = "worktreeCount: 1\nroster:\n  - { agentDef: sh, role: worker }\n  - { agentDef: nobody, role: ghost }\n";
    expect((await p.run(["swarm", "create", "half", "-"], { input: swarm })).code).toBe(0);
    const r = await p.pu("swarm", "run", "half");
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^spawned (ag-[a-z0-9]{8}) \(worker\) in wt-[a-z0-9]{8}\n$/);
    const errors = r.stderr.trimEnd().split("\n");
    expect(errors[0]).toMatch(/^pu: failed to start ghost \(agent definition nobody\): half-1: no agent named "nobody"/);
    expect(errors[1]).toBe("pu: swarm half: 1 spawned in 1 worktree, 1 failed (ghost); what started keeps running (see `pu status`)");

    const agentId = /ag-[a-z0-9]{8}/.exec(r.stdout)![0];
    const status = JSON.parse((await p.pu("status", "--json")).stdout) as { worktrees: Record<string, { agents: Record<string, unknown> }> };
    expect(Object.values(status.worktrees).some((w) => agentId in w.agents)).toBe(true);

    const json = await p.pu("swarm", "run", "half", "--json");
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ spawned: [{ role: "worker" }], failed: [{ role: "ghost", code: "NOT_FOUND" }] });
  });

  it("an unknown swarm exits 3", async () => {
    const r = await p.pu("swarm", "run", "nope");
    expect(r.code).toBe(3);
    expect(oneLine(r.stderr)).toMatch(/^pu: no swarm named nope \(looked in \.pu\/swarms and /);
  });
});

describe("pu schedule enable / disable", () => {
  const file = () => path.join(p.repo, ".pu", "schedules", "hourly-check.yaml");

  it("turns a schedule off and on, in the file and in the list", async () => {
    const schedule = "# checks every hour\nrecurrence: hourly\nstartAt: '2031-06-01T00:00:00Z'\ntrigger: { inlinePrompt: check things, agent: terminal }\n";
    expect((await p.run(["schedule", "create", "hourly-check", "-"], { input: schedule })).code).toBe(0);

    const listed = await p.pu("schedule", "list");
    expect(listed.stdout).toMatch(/^NAME\s+SCOPE\s+ENABLED\s+RECURRENCE\s+NEXT RUN\s+LAST RUN\s+MISSED$/m);
    expect(listed.stdout).toMatch(/^hourly-check\s+local\s+yes\s+hourly\s+2031-06-01T00:00:00\.000Z\s+never\s+0$/m);

    const off = await p.pu("schedule", "disable", "hourly-check");
    expect(off).toMatchObject({ code: 0, stdout: "schedule hourly-check disabled\n" });
    expect(readFileSync(file(), "utf8")).toMatch(/^enabled: false$/m);
    expect(readFileSync(file(), "utf8")).toContain("# checks every hour");
    const json = JSON.parse((await p.pu("schedule", "list", "--json")).stdout) as { definitions: { name: string; details: unknown }[] };
    expect(json.definitions.find((d) => d.name === "hourly-check")?.details).toMatchObject({ enabled: false, nextRun: null, missedRuns: 0 });
    expect((await p.pu("schedule", "list")).stdout).toMatch(/^hourly-check\s+local\s+no\s+hourly\s+-\s+never\s+0$/m);

    const on = await p.pu("schedule", "enable", "hourly-check", "--json");
    expect(on.code).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ name: "hourly-check", enabled: true });
    expect(readFileSync(file(), "utf8")).toMatch(/^enabled: true$/m);
  });

  it("an unknown schedule exits 3", async () => {
    const r = await p.pu("schedule", "enable", "nope");
    expect(r.code).toBe(3);
    expect(oneLine(r.stderr)).toMatch(/no schedule named "nope"/);
  });
});
