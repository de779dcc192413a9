// Why an agent waits, end to end through the real `pu` binary and daemon: a shell at its
// prompt, a turn-end signal from a CLI hook (`pu signal`), the screen of a CLI read with its
// agent type's markers, and the hook pu installs into Claude Code (a stand-in CLI here that
// runs the hooks of the settings file pu passes, as the real one does; the real CLIs are in
// real-agents.test.ts).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PuSandbox, PU_BIN, REPO_ROOT } from "../helpers/pu-sandbox.js";

const FAKE_CLAUDE = path.join(REPO_ROOT, "tests/fixtures/fake-claude.mjs");

describe("waiting reasons", { timeout: 120_000 }, () => {
  let sb: PuSandbox;

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-ready-");
    await sb.ok(["init"]);
    const config = path.join(sb.root, ".pu/config.yaml");
    writeFileSync(config, `${readFileSync(config, "utf8")}\nagents:\n  claude:\n    command: ${process.execPath} ${FAKE_CLAUDE}\n`);
    await sb.ok(["trust"]);
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("a shell at its prompt waits for a prompt; a hook's turn-end signal wins until the next Enter", async () => {
    const { agentId } = await sb.spawnAgent(["--root", "--command", "/bin/sh"]);
    const atPrompt = await sb.waitForAgent(agentId, "waiting at its prompt", (a) => a.status === "waiting");
    expect(atPrompt.waitingReason).toBe("prompt");

    // `pu signal` as a hook runs it: inside the agent's environment (PU_AGENT_ID), printing nothing.
    const busy = await sb.pu(["signal", "busy", "--hook"], { env: { PU_AGENT_ID: agentId } });
    expect(busy).toMatchObject({ code: 0, stdout: "" });
    expect(await sb.agent(agentId)).toMatchObject({ status: "streaming" });
    expect((await sb.agent(agentId)).waitingReason).toBeUndefined();
    await sb.ok(["signal", "turn-end", "--agent", agentId]);
    expect(await sb.agent(agentId)).toMatchObject({ status: "waiting", waitingReason: "turn_end" });

    // An Enter reaching the agent makes the signal stale: its prompt decides again.
    await sb.ok(["send", agentId, "echo next"]);
    await sb.waitForLogs(agentId, /next\r?\n/);
    await sb.waitForAgent(agentId, "back at its prompt", (a) => a.status === "waiting" && a.waitingReason === "prompt");
  });

  it("a hook never fails its CLI: no daemon, no agent, a bad signal are one stderr line and exit 0", async () => {
    const noAgent = await sb.pu(["signal", "turn-end", "--hook"], { env: { PU_AGENT_ID: undefined } });
    expect(noAgent.code).toBe(0);
    expect(noAgent.stderr.trim().split("\n")).toHaveLength(1);
    expect(noAgent.stderr).toMatch(/PU_AGENT_ID/);
    const unknown = await sb.pu(["signal", "turn-end", "--hook", "--agent", "ag-00000000"]);
    expect(unknown.code).toBe(0);
    expect(unknown.stderr).toMatch(/ag-00000000/);
    // Without --hook the same problems are errors with their exit codes.
    expect((await sb.pu(["signal", "sleepy", "--agent", "ag-00000000"])).code).toBe(2);
    expect((await sb.pu(["signal", "turn-end", "--agent", "ag-00000000"])).code).not.toBe(0);
  });

  it("a Claude-type CLI: streaming while its spinner shows, waiting (turn_end) after, from its Stop hook or its screen", async () => {
    const { agentId } = await sb.spawnAgent(["--root", "--agent", "claude", "WORK 1500 hooked answer"]);
    const settingsArg = (await sb.agent(agentId)) as { command?: string };
    expect(settingsArg.command ?? "").not.toMatch(/settings/); // the hook file is pu's business, not the command shown
    const worked = await sb.waitForLogs(agentId, "● hooked answer");
    expect(worked).toContain("esc to interrupt");
    const done = await sb.waitForAgent(agentId, "waiting after its answer", (a) => a.status === "waiting", 20_000);
    expect(done.waitingReason).toBe("turn_end");
    // pu's settings file hooks pu itself: the Stop hook names the pu CLI and `signal turn-end`.
    const settings = JSON.parse(readFileSync(path.join(sb.home, "agent-hooks/claude-settings.json"), "utf8")) as { hooks: Record<string, { hooks: { command: string }[] }[]> };
    const stopHook = settings.hooks.Stop?.[0]?.hooks[0]?.command ?? "";
    expect(stopHook).toContain(PU_BIN);
    expect(stopHook).toMatch(/ signal turn-end --hook$/);

    // Without hooks the screen alone tells: busy under the spinner, then the idle line.
    await sb.ok(["send", agentId, "WORK 3000 NOHOOK screen answer"]);
    await sb.waitForAgent(agentId, "streaming while it works", (a) => a.status === "streaming", 10_000);
    const seen: string[] = [];
    const after = await sb.waitForAgent(
      agentId,
      "waiting after the screen's idle line",
      (a) => {
        seen.push(`${a.status}/${a.waitingReason ?? "-"}`);
        return a.status === "waiting";
      },
      20_000,
    );
    expect(after.waitingReason).toBe("turn_end");
    expect(await sb.logs(agentId)).toContain("screen answer");
    expect(seen.filter((s) => s.startsWith("waiting")).length).toBe(1);
  });

  it("an Enter that starts nothing (a Claude-type CLI's empty input box) reads streaming, then waiting on its own; a trigger bound meanwhile runs then", async () => {
    const { agentId } = await sb.spawnAgent(["--root", "--agent", "claude", "WORK 200 first answer"]);
    await sb.waitForLogs(agentId, "● first answer");
    await sb.waitForAgent(agentId, "waiting after its answer", (a) => a.status === "waiting", 20_000);
    mkdirSync(path.join(sb.root, ".pu/triggers"), { recursive: true });
    writeFileSync(path.join(sb.root, ".pu/triggers/after-enter.yaml"), 'name: after-enter\non: agent_idle\nsequence:\n  - inject: "WORK 200 from the trigger"\n');
    await sb.ok(["trust"]);
    await sb.ok(["send", agentId, "--keys", "Enter"]);
    // The Enter makes the Stop hook's signal stale: the CLI may be taking a prompt.
    await sb.waitForAgent(agentId, "streaming after the Enter", (a) => a.status === "streaming", 5_000);
    await sb.ok(["trigger", "assign", agentId, "after-enter"]);
    // Nothing was printed since; the status watch must still find the agent waiting again, and tell the trigger.
    await sb.waitForLogs(agentId, "● from the trigger", 60_000);
  });

  it("a Claude-type CLI that kept a typed prompt in its input box (its Enter read as part of a paste) gets one more Enter", async () => {
    const { agentId } = await sb.spawnAgent(["--root", "--agent", "claude", "PASTED WORK 300 taken on the second Enter"]);
    await sb.waitForLogs(agentId, "● taken on the second Enter", 30_000);
    const done = await sb.waitForAgent(agentId, "waiting after its answer", (a) => a.status === "waiting", 20_000);
    expect(done.waitingReason).toBe("turn_end");
    const resubmits = readFileSync(path.join(sb.home, "daemon.log"), "utf8")
      .split("\n")
      .filter((line) => line.includes('"prompt_resubmitted"') && line.includes(agentId));
    expect(resubmits).toHaveLength(1);
  });
});
