// `turn`: the engine primitive triggers (and the queue, groups and plans) drive agents with.
// A real daemon runs in this process so the test can hold its state; the agents are real
// shells in real PTYs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient, type Client } from "@pu/ipc/client";
import { socketPath } from "@pu/core/paths";
import { launchAgent } from "../src/agents/launcher.js";
import type { LiveAgent } from "../src/session/live-agent.js";
import { awaitAnswer, startTurn, turn } from "../src/agents/turn.js";
import { startDaemon, type Daemon } from "../src/daemon.js";
import { cleanupAll, daemonEnv, makeProject, makeTempHome, trackAgentPid } from "./helpers/daemon.js";

let daemon: Daemon;
let client: Client;
let root: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  const home = makeTempHome();
  // The in-process daemon gives its agents this process's environment.
  Object.assign(process.env, daemonEnv(home), { PS1: "$ " });
  daemon = await startDaemon({ home });
  client = await connectClient({ socketPath: socketPath(home), clientName: "turn-test" });
  root = (await makeProject(client)).root;
});

afterAll(async () => {
  client?.close();
  await daemon?.stop("test done");
  process.env = savedEnv;
  await cleanupAll();
});

async function shell(): Promise<LiveAgent> {
  const launched = await launchAgent(daemon.state, { projectRoot: root, command: "/bin/sh -i", placement: { kind: "root" } });
  trackAgentPid(launched.entry.pid);
  // Its first prompt: the shell is ready for a turn.
  await awaitAnswer(daemon.state, launched.live, -1);
  return launched.live;
}

describe("turn", () => {
  it("types the text, waits for the agent to answer and be waiting again, and returns what it printed", async () => {
    const live = await shell();
    const result = await turn(daemon.state, live, "sleep 1; echo answer-$((6*7))");
    expect(result.outcome).toBe("waiting");
    expect(result.output).toContain("answer-42");
    // The answer came after the sleep: the turn did not end at the echo of the typed line.
    expect(result.durationMs).toBeGreaterThanOrEqual(1000);
    expect(live.session.exitCode).toBeNull();

    const second = await turn(daemon.state, live, "echo second-$((1+1))");
    expect(second.outcome).toBe("waiting");
    expect(second.output).toContain("second-2");
    expect(second.output).not.toContain("answer-42");
    expect(second.fromOffset).toBeGreaterThanOrEqual(result.toOffset);
  });

  it("ends with the exit code when the agent exits during the turn", async () => {
    const live = await shell();
    const result = await turn(daemon.state, live, "echo bye; exit 3");
    expect(result.outcome).toBe("exited");
    expect(result.exitCode).toBe(3);
    expect(result.output).toContain("bye");
  });

  it("gives up at the caller's time limit, and on its abort signal, with the agent still running", async () => {
    const live = await shell();
    const limited = await turn(daemon.state, live, "sleep 30", { timeoutMs: 700 });
    expect(limited.outcome).toBe("timed_out");
    expect(live.session.exitCode).toBeNull();

    const abort = new AbortController();
    const started = startTurn(daemon.state, live, "sleep 30");
    expect(await started.typed).toBe(true);
    const followed = awaitAnswer(daemon.state, live, live.session.ring.endOffset, { signal: abort.signal });
    abort.abort();
    expect((await followed).outcome).toBe("aborted");
    expect(live.session.exitCode).toBeNull();
  });
});
