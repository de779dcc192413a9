// `pu trigger assign` and `pu trigger log`: binding a trigger to a running agent and
// reading its gate runs, through the real bin and a real daemon.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCliProject, waitFor, type CliProject } from "./cli-project.js";

let p: CliProject;
let agentId: string;

interface AgentView {
  triggerName?: string;
  triggerTotal?: number;
  triggerState?: string;
  triggerSeqIndex?: number;
}

async function agentStatus(): Promise<AgentView> {
  const r = await p.pu("status", "--json");
  const report = JSON.parse(r.stdout) as { agents: Record<string, AgentView> };
  return report.agents[agentId]!;
}

beforeAll(async () => {
  p = await startCliProject("pu-cli-trigger-");
  const spawned = await p.pu("spawn", "--agent", "terminal", "--root", "--json");
  expect(spawned.code).toBe(0);
  agentId = (JSON.parse(spawned.stdout) as { agentId: string }).agentId;
  const trigger = "on: agent_idle\nsequence:\n  - gate: { run: 'echo checking {{WHAT}}; exit 3' }\n    inject: echo never\n";
  expect((await p.run(["trigger", "create", "check", "-"], { input: trigger })).code).toBe(0);
}, 60_000);
afterAll(async () => {
  await p?.stop();
}, 60_000);

describe("pu trigger assign / log", () => {
  it("says when there are no gate runs yet", async () => {
    const r = await p.pu("trigger", "log", agentId);
    expect(r).toMatchObject({ code: 0, stdout: `no gate runs for ${agentId}\n` });
  });

  it("binds the trigger (status --json shows it) and its gate run is logged", async () => {
    const r = await p.pu("trigger", "assign", agentId, "check", "--var", "WHAT=the build");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`assigned trigger check (1 step) to ${agentId}\n`);
    expect(await agentStatus()).toMatchObject({ triggerName: "check", triggerTotal: 1 });

    // The shell waits for input, so the gate runs, fails (exit 3, no retries) and the trigger fails.
    await waitFor("the trigger to fail", async () => ((await agentStatus()).triggerState === "failed" ? true : undefined));
    const log = await p.pu("trigger", "log", agentId);
    expect(log.code).toBe(0);
    const lines = log.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\S+Z {2}check step 1 {2}failed \(exit 3\) {2}\d+(ms|\.\ds)$/);
    // The variable reaches the gate as an environment variable, never as shell text.
    expect(lines[1]).toBe('  $ echo checking "${PU_VAR_WHAT}"; exit 3');
    expect(lines[2]).toBe("  | checking the build");

    const json = JSON.parse((await p.pu("trigger", "log", agentId, "--json")).stdout) as { runs: unknown[] };
    expect(json.runs).toEqual([
      expect.objectContaining({ agentId, triggerName: "check", seqIndex: 0, exitCode: 3, timedOut: false, outputTail: "checking the build\n" }),
    ]);
  });

  it("assigning again starts the trigger over", async () => {
    const r = await p.pu("trigger", "assign", agentId, "check", "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ agentId, triggerName: "check", triggerTotal: 1, triggerState: "active" });
  });

  it("an unknown trigger exits 3 naming where it looked", async () => {
    const r = await p.pu("trigger", "assign", agentId, "nope");
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(`pu: no trigger named nope (looked in .pu/triggers and ${p.home}/triggers); see \`pu trigger list\`\n`);
  });

  it("an unknown agent exits 3", async () => {
    expect((await p.pu("trigger", "assign", "ag-zzzzzzzz", "check")).code).toBe(3);
    expect((await p.pu("trigger", "log", "ag-zzzzzzzz")).code).toBe(3);
  });

  it("a git-hook trigger cannot be bound to an agent", async () => {
    const hook = "on: pre_commit\nsequence:\n  - gate: { run: 'true' }\n";
    expect((await p.run(["trigger", "create", "hooked", "-"], { input: hook })).code).toBe(0);
    const r = await p.pu("trigger", "assign", agentId, "hooked");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/only agent_idle triggers can be bound to an agent/);
  });

  it("a malformed --var is a usage error", async () => {
    const r = await p.pu("trigger", "assign", agentId, "check", "--var", "NOEQUALS");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('pu: --var expects KEY=VALUE, got "NOEQUALS"\n');
  });
});
