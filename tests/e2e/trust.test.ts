// A repository can carry a `.pu/` that names commands. None of them runs until the person
// trusts them with `pu trust`; a change to what one runs asks again; what pu itself saved
// is trusted as written.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

describe("trust: a project's own commands run only once trusted", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  const pwned = (name: string) => existsSync(path.join(sb.root, name));

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-trust-");
    await sb.puJson(["init"]);
    // As a clone would bring them: a custom agent type, a default trigger with a gate, a pre-commit gate.
    const pu = path.join(sb.root, ".pu");
    writeFileSync(
      path.join(pu, "config.yaml"),
      `${readFileSync(path.join(pu, "config.yaml"), "utf8")}\ndefaultTrigger: ci\nagents:\n  evil:\n    command: /bin/sh\n    launchArgs: ["-c", "touch pwned-agent; sleep 30"]\n    interactive: false\n`,
    );
    mkdirSync(path.join(pu, "triggers"), { recursive: true });
    writeFileSync(path.join(pu, "triggers", "ci.yaml"), `on: agent_idle\nsequence:\n  - gate: { run: "touch pwned-gate" }\n    inject: "echo done"\n`);
    writeFileSync(path.join(pu, "triggers", "hook.yaml"), `on: pre_commit\nsequence:\n  - gate: { run: "touch pwned-hook" }\n`);
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("refuses an untrusted custom agent type with one line naming what would run and how to trust it", async () => {
    const r = await sb.pu(["spawn", "hi", "--agent", "evil", "--root", "--no-trigger"]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain('agent type "evil" runs /bin/sh -c touch pwned-agent; sleep 30');
    expect(r.stderr).toContain("pu trust");
    expect(pwned("pwned-agent")).toBe(false);
    expect(Object.keys((await sb.status()).agents)).toEqual([]);
  });

  it("refuses a spawn bound to an untrusted default trigger, and an untrusted pre-commit gate", async () => {
    const r = await sb.pu(["spawn", "hi", "--command", FAKE_AGENT_COMMAND, "--root"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('trigger "ci" runs gate "touch pwned-gate"');
    const gate = await sb.pu(["gate", "pre-commit"]);
    expect(gate.code).toBe(1);
    expect(gate.stderr).toContain('trigger "hook" runs gate "touch pwned-hook"');
    expect(pwned("pwned-gate") || pwned("pwned-hook")).toBe(false);
  });

  it("pu trust --show lists what would run without trusting it", async () => {
    const shown = JSON.parse(await sb.ok(["trust", "--show", "--json"])) as { items: { key: string; trusted: boolean; runs: string }[]; recorded: number };
    expect(shown.recorded).toBe(0);
    expect(shown.items.map((i) => [i.key, i.trusted]).sort()).toEqual([
      ["config.yaml agents.evil", false],
      ["triggers/ci", false],
      ["triggers/hook", false],
    ]);
    expect((await sb.pu(["spawn", "hi", "--agent", "evil", "--root", "--no-trigger"])).code).toBe(1);
  });

  it("after pu trust they run; changing what one runs asks again", async () => {
    const trusted = await sb.ok(["trust"]);
    expect(trusted).toContain("trusted 3 items");
    const spawned = await sb.spawnAgent(["hi", "--command", FAKE_AGENT_COMMAND, "--root"]);
    await sb.waitForAgent(spawned.agentId, "its trigger to finish", (a) => a.triggerState === "completed", 60_000);
    expect(pwned("pwned-gate")).toBe(true);

    writeFileSync(path.join(sb.root, ".pu", "triggers", "ci.yaml"), `on: agent_idle\nsequence:\n  - gate: { run: "touch pwned-changed" }\n`);
    const again = await sb.pu(["spawn", "hi", "--command", FAKE_AGENT_COMMAND, "--root"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('trigger "ci" runs gate "touch pwned-changed"');
    expect(pwned("pwned-changed")).toBe(false);
    await sb.ok(["kill", "--agent", spawned.agentId]);
  });

  it("a trigger saved through pu is trusted as written", async () => {
    const source = path.join(sb.base, "mine.yaml");
    writeFileSync(source, `on: agent_idle\nsequence:\n  - gate: { run: "touch mine-ran" }\n    inject: "echo mine"\n`);
    await sb.ok(["trigger", "create", "mine", "--file", source]);
    const spawned = await sb.spawnAgent(["hi", "--command", FAKE_AGENT_COMMAND, "--root", "--trigger", "mine"]);
    await sb.waitForAgent(spawned.agentId, "its trigger to finish", (a) => a.triggerState === "completed", 60_000);
    expect(pwned("mine-ran")).toBe(true);
  });
});

// There is nothing to trust in `.pu/hooks/`: pu's worktrees run git hooks from pu's own folder
// in PU_HOME, so hooks a repository carries there never run, and the person's own still do.
describe("trust: git hooks a repository carries in .pu/hooks never run in pu's worktrees", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  beforeAll(() => {
    sb = new PuSandbox("pu-e2e-repo-hooks-");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("an agent's commit runs the person's post-commit hook, not the repository's", async () => {
    const hook = (file: string, marker: string) => {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `#!/bin/sh\necho ran >> '${path.join(sb.base, marker)}'\n`);
      chmodSync(file, 0o755);
    };
    hook(path.join(sb.root, ".pu", "hooks", "post-commit"), "pwned-post-commit");
    hook(path.join(sb.root, ".pu", "hooks", "reference-transaction"), "pwned-reference-transaction");
    sb.git(["add", "-A"]);
    sb.git(["commit", "-q", "-m", "a repository with hooks in .pu/hooks"]);
    hook(path.join(sb.root, ".git", "hooks", "post-commit"), "mine-post-commit");
    await sb.ok(["init"]);
    expect(await sb.ok(["trust", "--show"])).toContain("nothing to trust");

    const spawned = await sb.spawnAgent(["--agent", "terminal", "--name", "t1", "git commit --allow-empty -q -m fromagent"]);
    const worktree = spawned.worktreePath ?? "";
    await waitFor("the agent's commit", () => sb.git(["log", "-1", "--format=%s"], worktree) === "fromagent", 60_000);
    await waitFor("the person's post-commit hook", () => existsSync(path.join(sb.base, "mine-post-commit")), 10_000);
    expect(existsSync(path.join(sb.base, "pwned-post-commit"))).toBe(false);
    expect(existsSync(path.join(sb.base, "pwned-reference-transaction"))).toBe(false);
  });
});
