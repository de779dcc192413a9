// Text a user hands pu (prompts, names, sent text, pass-through arguments) reaches the
// agent verbatim and is never evaluated by a shell on the way: no `pwned` file appears.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allAgents, FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";

/** Every path under `dir` whose file name starts with "pwned". */
function pwnedFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.name.startsWith("pwned")) found.push(path.join(entry.parentPath, entry.name));
  }
  return found;
}

describe("shell metacharacters end to end", { timeout: 120_000 }, () => {
  let sb: PuSandbox;
  let nasty: string;

  beforeAll(() => {
    sb = new PuSandbox("pu-e2e-injection-");
    // Command substitution both ways, quotes of both kinds, a separator and an absolute target.
    nasty = `$(touch pwned) \`touch pwned-tick\` "double" 'single' ; touch ${sb.base}/pwned-abs && echo $HOME`;
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("a spawn prompt typed into an interactive agent arrives verbatim", async () => {
    await sb.puJson(["init"]);
    const spawned = await sb.spawnAgent([nasty, "--command", FAKE_AGENT_COMMAND, "--name", "$(touch pwned-name)"]);
    // The fake agent answers an unknown line with `unknown: <line>`: the exact bytes it read.
    const logs = await sb.waitForLogs(spawned.agentId, `unknown: ${nasty}`);
    expect(logs).toContain(`unknown: ${nasty}\r\n`);
    const wt = (await sb.status()).worktrees[spawned.worktreeId!]!;
    expect(wt.name).toBe("touch-pwned-name");
    expect(pwnedFiles(sb.base)).toEqual([]);
  });

  it("a root agent's name, pass-through arguments and sent text arrive verbatim", async () => {
    const name = "$(touch pwned-agent) `touch pwned-agent2` \"q\" 'q'";
    const spawned = await sb.spawnAgent(["--root", "--command", FAKE_AGENT_COMMAND, "--name", name, "--", nasty, "$(touch pwned-arg)"]);
    const logs = await sb.waitForLogs(spawned.agentId, "arg $(touch pwned-arg)");
    expect(logs).toContain(`arg ${nasty}\r\n`);
    expect(allAgents(await sb.status()).find((a) => a.id === spawned.agentId)!.name).toBe(name);

    await sb.ok(["send", spawned.agentId, `echo ${nasty}`]);
    await sb.waitForLogs(spawned.agentId, `\n${nasty}\r\n`);
    expect(pwnedFiles(sb.base)).toEqual([]);
  });

  it("a prompt passed as an argument (promptFlag) to a configured agent type arrives as one argument", async () => {
    const config = path.join(sb.root, ".pu", "config.yaml");
    writeFileSync(
      config,
      readFileSync(config, "utf8") +
        `\nagents:\n  scripted:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    promptFlag: --prompt\n    interactive: false\n    launchArgs: []\n`,
    );
    await sb.ok(["trust"]); // the project's own agent type runs only once trusted
    const spawned = await sb.spawnAgent([nasty, "--agent", "scripted", "--root"]);
    const logs = await sb.waitForLogs(spawned.agentId, "arg --prompt");
    await sb.waitForLogs(spawned.agentId, `arg ${nasty}\r\n`);
    expect(logs).not.toContain("unknown:");
    expect(pwnedFiles(sb.base)).toEqual([]);
    expect(pwnedFiles(process.cwd())).toEqual([]);
  });
});
