// Every mistake a user can type gets one clear stderr line and the documented exit code:
// 1 failure, 2 usage, 3 not found / not initialized, 4 daemon unavailable.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PuSandbox, type PuRun } from "../helpers/pu-sandbox.js";

/** Exactly one line on stderr, starting "pu: ", matching `pattern`. */
function expectOneLineError(run: PuRun, code: number, pattern: RegExp): void {
  expect(run.code, `exit code (stderr: ${run.stderr.trim()})`).toBe(code);
  expect(run.stderr, "exactly one stderr line").toMatch(/^pu: [^\n]+\n$/);
  expect(run.stderr).toMatch(pattern);
  expect(run.stdout).toBe("");
}

describe("pu bad input end to end", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  let elsewhere: string;

  beforeAll(() => {
    sb = new PuSandbox("pu-e2e-bad-input-");
    elsewhere = path.join(sb.base, "not-a-project");
    mkdirSync(elsewhere);
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("spawn outside a project exits 3 and says to run pu init", async () => {
    const run = await sb.pu(["spawn", "--agent", "terminal"], { cwd: elsewhere });
    expectOneLineError(run, 3, /not-a-project.*`pu init`/);
  });

  it("an unknown agent id exits 3 for every command that takes one", async () => {
    await sb.puJson(["init"]);
    const missing = "ag-zzzzzzzz";
    for (const args of [
      ["send", missing, "hi"],
      ["logs", missing],
      ["attach", missing],
      ["kill", "--agent", missing],
      ["bench", missing],
      ["play", missing],
      ["status", "--agent", missing],
    ]) {
      const run = await sb.pu(args);
      expectOneLineError(run, 3, new RegExp(`no agent.* ${missing}`));
    }
  });

  it("a preferred model that starts with '-' is refused like every other model value, and nothing is stored", async () => {
    expectOneLineError(await sb.pu(["stats", "prefer", "--model=-x", "terminal"]), 2, /--model "-x" must not start with "-"/);
    expect(JSON.parse((await sb.ok(["stats", "--json"])) || "{}").stats?.preferred_tool ?? null).toBeNull();
  });

  it("an unknown plan exits 3 for every command that takes one, naming its file", async () => {
    for (const args of [["plan", "show", "nope"], ["plan", "status", "nope"], ["plan", "approve", "nope"], ["plan", "run", "nope"], ["plan", "cancel", "nope"], ["plan", "evidence", "nope"], ["plan", "merge", "nope"]]) {
      const run = await sb.pu(args);
      expectOneLineError(run, 3, /plans\/nope\/session\.json does not exist/);
    }
  });

  it("an unknown worktree exits 3 for every command that takes one", async () => {
    const missing = "wt-zzzzzzzz";
    for (const args of [
      ["spawn", "--agent", "terminal", "--worktree", missing],
      ["merge", missing],
      ["clean", "--worktree", missing],
      ["diff", "--worktree", missing],
      ["kill", "--worktree", missing],
    ]) {
      const run = await sb.pu(args);
      expectOneLineError(run, 3, new RegExp(`no (agent or )?worktree ${missing}`));
    }
  });

  it("a worktree name with no usable characters is an error; ../x is normalized to x inside .pu/worktrees", async () => {
    for (const name of ["///", "", "$$$"]) {
      const run = await sb.pu(["spawn", "--agent", "terminal", "--name", name]);
      expectOneLineError(run, 2, /worktree name .* has no usable characters/);
    }
    expect(sb.git(["branch", "--list", "pu/*"])).toBe("");

    const dotted = await sb.spawnAgent(["--agent", "terminal", "--name", "../x"]);
    const wt = (await sb.status()).worktrees[dotted.worktreeId!]!;
    expect(wt).toMatchObject({ name: "x", branch: "pu/x" });
    expect(path.relative(path.join(sb.root, ".pu", "worktrees"), wt.path)).not.toMatch(/^\.\./);
    await sb.ok(["clean", "--all"]);
  });

  it("an unknown agent type exits 1 and lists the known types", async () => {
    const run = await sb.pu(["spawn", "--agent", "nosuch"]);
    expectOneLineError(run, 2, /unknown agent type 'nosuch'.*claude.*codex.*opencode.*terminal/);
  });

  it("conflicting spawn flags are usage errors (exit 2)", async () => {
    expectOneLineError(await sb.pu(["spawn", "--agent", "terminal", "--root", "--worktree", "wt-12345678"]), 2, /--root and --worktree cannot be used together/);
    expectOneLineError(await sb.pu(["spawn", "--agent", "terminal", "--trigger", "x", "--no-trigger"]), 2, /--trigger and --no-trigger cannot be used together/);
  });

  it("an unknown --keys name exits 2 and lists the valid keys", async () => {
    const run = await sb.pu(["send", "ag-zzzzzzzz", "--keys", "C-c Frob"]);
    expectOneLineError(run, 2, /unknown key name "Frob"; valid keys: .*Enter/);
  });

  it("an unknown command and a missing argument are usage errors (exit 2)", async () => {
    expectOneLineError(await sb.pu(["frobnicate"]), 2, /unknown command "frobnicate"/);
    expectOneLineError(await sb.pu(["logs"]), 2, /pu logs --help/);
  });

  it("a corrupt manifest exits 1 naming the file, and is left byte for byte as it was", async () => {
    const manifest = path.join(sb.root, ".pu", "manifest.json");
    const good = readFileSync(manifest);
    const corrupt = Buffer.from('{"version": 1, "projectRoot": ');
    writeFileSync(manifest, corrupt);
    try {
      for (const args of [["status"], ["spawn", "--agent", "terminal"], ["kill", "--all"], ["diff"]]) {
        const run = await sb.pu(args);
        expectOneLineError(run, 1, new RegExp(`manifest ${manifest.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not valid JSON`));
      }
      expect(readFileSync(manifest).equals(corrupt), "the corrupt manifest is untouched").toBe(true);

      // Valid JSON with a field of the wrong shape names the field path too.
      const wrongShape = Buffer.from(JSON.stringify({ ...JSON.parse(good.toString()), agents: { "ag-aaaaaaaa": { id: "ag-aaaaaaaa", status: "running" } } }));
      writeFileSync(manifest, wrongShape);
      expectOneLineError(await sb.pu(["status"]), 1, /manifest .*manifest\.json is invalid: agents\.ag-aaaaaaaa\.name/);
      expect(readFileSync(manifest).equals(wrongShape)).toBe(true);
    } finally {
      writeFileSync(manifest, good);
    }
    await sb.status();
  });

  it("usage and budget mistakes: one line each with its exit code; a corrupt usage.json is reported and left as it was", async () => {
    await sb.ok(["init"]);
    expectOneLineError(await sb.pu(["usage", "--by", "colour"]), 2, /--by expects one of agent, ticket, group, plan, model, day, got "colour"/);
    expectOneLineError(await sb.pu(["usage", "--since", "last week"]), 2, /--since expects a day \(2026-11-01\), "today" or a number of days \(7d\), got "last week"/);
    expectOneLineError(await sb.pu(["spawn", "--agent", "terminal", "--max-cost", "0"]), 2, /--max-cost expects a positive number, got "0"/);
    expectOneLineError(await sb.pu(["spawn", "--agent", "terminal", "--max-tokens", "1.5"]), 2, /--max-tokens expects a whole number of at least 1, got "1.5"/);
    expectOneLineError(await sb.pu(["plan", "start", "a goal", "--max-cost", "0"]), 2, /--max-cost expects a positive number, got "0"/);
    expectOneLineError(await sb.pu(["plan", "start", "a goal", "--max-tokens", "0"]), 2, /--max-tokens expects a whole number of at least 1, got "0"/);
    expectOneLineError(await sb.pu(["budget", "ag-zzzzzzzz"]), 2, /give --max-tokens N and\/or --max-cost USD/);
    expectOneLineError(await sb.pu(["budget", "ag-zzzzzzzz", "--max-cost", "1"]), 3, /no agent ag-zzzzzzzz/);

    // The daemon reads usage.json when a project is first asked about: a fresh daemon sees the corrupt file.
    await sb.ok(["daemon", "stop"]);
    const usageFile = path.join(sb.root, ".pu", "usage.json");
    const corrupt = Buffer.from('{"version": 1, "agents": ');
    writeFileSync(usageFile, corrupt);
    // The daemon reads the file once: the line says a restart is what picks up the fix.
    expectOneLineError(await sb.pu(["usage"]), 1, /usage\.json: not valid JSON.*pu does not overwrite it; fix or move it, then `pu daemon restart`/);
    const agentId = (await sb.spawnAgent(["--agent", "terminal", "--root"])).agentId;
    expectOneLineError(await sb.pu(["budget", agentId, "--max-cost", "1"]), 1, /usage\.json: not valid JSON.*pu does not overwrite it/);
    await sb.ok(["kill", agentId]);
    await sb.ok(["daemon", "stop"]);
    expect(readFileSync(usageFile).equals(corrupt), "the corrupt usage.json is untouched").toBe(true);
  });

  it("a corrupt projects.json is reported by pu daemon status and never overwritten: the other projects it lists are kept", async () => {
    await sb.ok(["init"]);
    await sb.ok(["daemon", "stop"]);
    const projectsFile = path.join(sb.home, "projects.json");
    const entries = `{ "root": "/srv/other-project", "lastSeenAt": "2026-01-01T00:00:00.000Z" }, { "root": ${JSON.stringify(sb.root)}, "lastSeenAt": "2026-01-01T00:00:00.000Z" }`;
    const corrupt = Buffer.from(`{ "version": 1, "projects": [${entries},] }\n`);
    writeFileSync(projectsFile, corrupt);
    // The project still answers; nothing it does rewrites the file.
    expect((await sb.pu(["status"])).code).toBe(0);
    await sb.ok(["init"], { cwd: elsewhereRepo() });
    const status = await sb.pu(["daemon", "status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^problem: ${escape(projectsFile)}: not valid JSON [^\n]*pu daemon restart`, "m"));
    expect(readFileSync(projectsFile).equals(corrupt), "the corrupt projects.json is untouched").toBe(true);

    // Fixed and restarted, the daemon remembers them all, and the new ones again.
    writeFileSync(projectsFile, `{ "version": 1, "projects": [${entries}] }\n`);
    await sb.ok(["daemon", "restart"]);
    expect(await sb.ok(["daemon", "status"])).not.toContain("problem:");
    await sb.ok(["status", "--project", elsewhereRepo()]);
    const roots = (JSON.parse(readFileSync(projectsFile, "utf8")) as { projects: { root: string }[] }).projects.map((p) => p.root);
    expect(roots).toEqual(["/srv/other-project", sb.root, elsewhereRepo()]);
  });

  it("a corrupt .pu/schedule-state.json is named by pu schedule list and never overwritten: the other schedules' counts are kept", async () => {
    await sb.ok(["init"]);
    const hour = 3_600_000;
    const now = Date.now();
    const schedule = path.join(sb.root, ".pu", "schedules", "nightly.yaml");
    const nightly = (nextRun: number) =>
      `recurrence: hourly\nstartAt: "${new Date(now - 4.5 * hour).toISOString()}"\nnextRun: "${new Date(nextRun).toISOString()}"\ntrigger:\n  inlinePrompt: "echo should not run"\n  agent: terminal\nroot: true\n`;
    // Written by hand and trusted; its times are not part of what is trusted (an untrusted
    // schedule's runs would be held, not missed).
    mkdirSync(path.dirname(schedule), { recursive: true });
    writeFileSync(schedule, nightly(now + 10 * hour));
    await sb.ok(["trust"]);
    await sb.ok(["daemon", "stop"]);
    writeFileSync(schedule, nightly(now - 2.5 * hour));
    const stateFile = path.join(sb.root, ".pu", "schedule-state.json");
    const corrupt = Buffer.from('{ "version": 1, "schedules": { "weekly": { "missedRuns": 7 }, } }\n');
    writeFileSync(stateFile, corrupt);

    // The daemon's first look finds nightly's missed runs: it moves nextRun on, and cannot count them.
    await sb.ok(["daemon", "start"]);
    for (let i = 0; i < 100 && new Date(/nextRun: "?([^"\n]+)/.exec(readFileSync(schedule, "utf8"))?.[1] ?? 0).getTime() < now; i++) await new Promise((r) => setTimeout(r, 100));
    const listed = await sb.pu(["schedule", "list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^nightly\s+local\s+yes\s+hourly\s+\S+\s+never\s+\?\s*$/m);
    const problems = listed.stdout.split("\n").filter((line) => line.startsWith("problem: "));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^problem: ${escape(stateFile)}: not valid JSON`));
    expect(readFileSync(stateFile).equals(corrupt), "the corrupt schedule-state.json is untouched").toBe(true);
    expect(readFileSync(path.join(sb.home, "daemon.log"), "utf8")).toMatch(/"event":"schedule_state_unreadable"[^\n]*"notRecorded":"3 missed run\(s\)"/);

    // Fixed by hand: the counts it holds show again.
    writeFileSync(stateFile, '{ "version": 1, "schedules": { "weekly": { "missedRuns": 7 }, "nightly": { "missedRuns": 2 } } }\n');
    const fixed = await sb.ok(["schedule", "list"]);
    expect(fixed).toMatch(/^nightly\s+local\s+yes\s+hourly\s+\S+\s+never\s+2\s*$/m);
    expect(fixed).not.toContain("problem:");
    await sb.ok(["daemon", "stop"]);
  });

  /** A second git repository beside the sandbox's. */
  function elsewhereRepo(): string {
    const dir = path.join(sb.base, "second-repo");
    if (!existsSync(dir)) {
      mkdirSync(dir);
      sb.git(["init", "-q", dir]);
    }
    return dir;
  }
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

