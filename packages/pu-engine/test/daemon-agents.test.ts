import { copyFileSync, readFileSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { encodeFrame } from "@pu/ipc/frame";
import type { StatusEvent } from "@pu/ipc/protocol";
import {
  cleanupAll,
  collectEvents,
  FAKE_AGENT,
  FAKE_AGENT_COMMAND,
  isProcessAlive,
  makeProject,
  manifestAgent,
  outputBytes,
  startTestDaemon,
  trackAgentPid,
  waitFor,
} from "./helpers/daemon.js";
import { findStrayAgents } from "../src/stray-agents.js";

afterEach(cleanupAll);

const enter = (text: string) => Buffer.from(`${text}\r`);

describe("agents through the daemon", () => {
  it("a fake agent goes streaming → waiting → broken, and its exit code is persisted", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const stream = await client.openStream("subscribe_status", { projectRoot: repo.root });
    const { events } = collectEvents(stream);

    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, name: "faker" });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    expect(spawned.agent).toMatchObject({ name: "faker", agentType: "terminal", status: "streaming", command: FAKE_AGENT_COMMAND });
    expect(manifestAgent(repo.root, id)).toMatchObject({ status: "streaming", pid: spawned.agent.pid });
    expect(typeof manifestAgent(repo.root, id)?.pidStartTime).toBe("string");

    const statusOf = async () => (await client.request("status", { projectRoot: repo.root, agentId: id })).agents[id];
    // Each step waits for the pushed change, so the daemon has seen the state before the next input.
    const transitions = () =>
      events
        .filter((e): e is StatusEvent => e.type === "status_event")
        .flatMap((e) => e.changed.filter((c) => c.agentId === id).map((c) => c.to));
    const pushed = (...expected: string[]) =>
      waitFor(`pushed transitions ${expected.join(" → ")}`, () => transitions().join() === expected.join());

    await pushed("waiting");
    expect((await statusOf())?.status).toBe("waiting");
    await client.request("input", { agentId: id, data: enter("sleep 1500") });
    await pushed("waiting", "streaming");
    expect((await statusOf())?.status).toBe("streaming");
    await pushed("waiting", "streaming", "waiting");

    await client.request("input", { agentId: id, data: enter("exit 3") });
    await pushed("waiting", "streaming", "waiting", "broken");
    await waitFor("the exit to be persisted", () => manifestAgent(repo.root, id)?.status === "broken");
    const stored = manifestAgent(repo.root, id);
    expect(stored).toMatchObject({ status: "broken", exitCode: 3, pid: spawned.agent.pid });
    expect(stored?.completedAt).toBeDefined();
    const view = await statusOf();
    expect(view).toMatchObject({ status: "broken", storedStatus: "broken", live: false, idleSeconds: null });

    // The output stays readable after the exit.
    const logs = await client.request("logs", { agentId: id });
    expect(Buffer.from(logs.data).toString()).toContain("fake-agent ready");
    expect(logs).toMatchObject({ exited: true, exitCode: 3 });
    stream.close();
  });

  it("a terminal agent runs the shell and records how it exited", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, agent: "terminal", prompt: "echo hi-from-pu" });
    trackAgentPid(spawned.agent.pid);
    expect(spawned.agent.name).toBe("Terminal");
    await waitFor("the typed prompt to run", async () =>
      Buffer.from((await client.request("logs", { agentId: spawned.agentId })).data).toString().includes("hi-from-pu\r\n"),
    );
    await client.request("input", { agentId: spawned.agentId, data: enter("exit 7") });
    await waitFor("exit 7 in the manifest", () => manifestAgent(repo.root, spawned.agentId)?.exitCode === 7);
  });

  it("pushes waiting at the idle deadline with no request at all", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client, "idleThresholdSeconds: 1\n");
    const stream = await client.openStream("subscribe_status", { projectRoot: repo.root });
    const { events } = collectEvents(stream);
    const spawned = await client.request("spawn", {
      projectRoot: repo.root,
      root: true,
      command: `${FAKE_AGENT_COMMAND} --no-prompt`,
    });
    trackAgentPid(spawned.agent.pid);
    const event = await waitFor("a pushed waiting status", () =>
      events.find((e) => e.type === "status_event" && e.changed.some((c) => c.agentId === spawned.agentId && c.to === "waiting")),
    );
    expect(event.type === "status_event" && event.report.agents[spawned.agentId]?.status).toBe("waiting");
    // Persisted too (debounced), so the stored status is a fair last-known value.
    await waitFor("waiting persisted", () => manifestAgent(repo.root, spawned.agentId)?.status === "waiting");
    stream.close();
  });

  it("two viewers get identical bytes, replay included", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    await waitFor("the banner", async () => (await client.request("logs", { agentId: id })).endOffset > 0);

    const viewerA = await (await daemon.client("a")).openStream("attach", { agentId: id, fromOffset: 0 });
    const viewerB = await (await daemon.client("b")).openStream("attach", { agentId: id });
    expect(viewerA.result.offset).toBe(0);
    expect(viewerB.result.offset).toBe(0);
    const a = collectEvents(viewerA);
    const b = collectEvents(viewerB);
    await viewerA.request("input", { agentId: id, data: enter("spam 3000") });
    for (const v of [a, b]) await waitFor("spam done", () => outputBytes(v.events).includes("spam done"));
    const bytesA = outputBytes(a.events);
    expect(bytesA.toString()).toContain("fake-agent ready");
    expect(bytesA.toString()).toContain("spam 3000\r\n");
    expect(outputBytes(b.events).equals(bytesA)).toBe(true);

    await viewerA.request("input", { agentId: id, data: enter("exit 0") });
    for (const v of [a, b]) await waitFor("the exit event", () => v.events.some((e) => e.type === "exit" && e.exitCode === 0));
  });

  it("with viewers of different sizes the PTY takes the smallest, follows a viewer that leaves, and clamps oversized windows", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, agent: "terminal" });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    const wide = await (await daemon.client("wide")).openStream("attach", { agentId: id });
    const narrowClient = await daemon.client("narrow");
    const narrow = await narrowClient.openStream("attach", { agentId: id });
    const seen = collectEvents(wide);
    // What the program itself sees, not what pu thinks it set.
    const sttySize = async (marker: string) => {
      await wide.request("input", { agentId: id, data: enter(`echo ${marker}=$(stty size)`) });
      const text = await waitFor(`${marker} from stty`, () => new RegExp(`${marker}=(\\d+) (\\d+)`).exec(outputBytes(seen.events).toString()));
      return `${text[2]}x${text[1]}`;
    };

    expect(await wide.request("resize", { agentId: id, cols: 5000, rows: 60 })).toEqual({ cols: 1000, rows: 60 });
    expect(await narrow.request("resize", { agentId: id, cols: 80, rows: 70 })).toEqual({ cols: 80, rows: 60 });
    expect(await sttySize("both")).toBe("80x60");
    narrowClient.close(); // the narrow viewer detaches
    await waitFor("the narrow viewer's size to be dropped", async () => {
      const r = await wide.request("resize", { agentId: id, cols: 5000, rows: 60 });
      return r.cols === 1000 ? r : undefined;
    });
    expect(await sttySize("alone")).toBe("1000x60");
    wide.close();
  });

  it("a spawn prompt goes into a program that enabled bracketed paste as one paste, then Enter; control characters are refused", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const record = path.join(repo.root, "typed.hex");
    await expect(
      client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, prompt: "stop\x03 now" }),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("control character \\x03 at position 5") });

    const spawned = await client.request("spawn", {
      projectRoot: repo.root,
      root: true,
      command: `${process.execPath} ${path.join(path.dirname(FAKE_AGENT), "paste-agent.mjs")} ${record}`,
      prompt: "line one\r\nline two",
    });
    trackAgentPid(spawned.agent.pid);
    await waitFor("the prompt to be submitted", async () => Buffer.from((await client.request("logs", { agentId: spawned.agentId })).data).includes("submitted"));
    const typed = Buffer.from(readFileSync(record, "utf8").split("\n").join(""), "hex").toString("latin1");
    expect(typed).toBe("\x1b[200~line one\nline two\x1b[201~\r");
    // Enter arrives as its own key press, after the paste ended.
    expect(readFileSync(record, "utf8").trim().split("\n").at(-1)).toBe("0d");
  });

  it("a viewer that never reads slows neither the agent nor another viewer", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;

    const stuck = createConnection(daemon.socketPath);
    stuck.on("error", () => undefined);
    await new Promise<void>((resolve) => stuck.once("connect", () => resolve()));
    stuck.pause(); // never reads a byte
    stuck.write(encodeFrame({ type: "hello", id: 1, protocolVersion: 1, client: "stuck" }));
    stuck.write(encodeFrame({ type: "attach", id: 2, agentId: id, fromOffset: 0 }));

    await waitFor("the prompt", async () => (await client.request("status", { projectRoot: repo.root })).agents[id]?.status === "waiting");
    const fast = await (await daemon.client("fast")).openStream("attach", { agentId: id, fromOffset: 0 });
    const seen = collectEvents(fast);
    const lines = 60_000;
    await client.request("input", { agentId: id, data: enter(`spam ${lines}`) });
    await waitFor("the fast viewer to see the whole spam", () => outputBytes(seen.events).includes("spam done"), 60_000);
    const text = outputBytes(seen.events).toString();
    const missing = [1, 2, Math.floor(lines / 2), lines - 1, lines].filter((n) => !text.includes(`\nspam ${n}\r\n`));
    expect(missing, text.slice(0, 300)).toEqual([]);
    expect(seen.events.some((e) => e.type === "notice")).toBe(false);
    // The agent is still responsive.
    await client.request("input", { agentId: id, data: enter("echo still-here") });
    await waitFor("the agent to answer", async () =>
      Buffer.from((await client.request("logs", { agentId: id, tail: 200 })).data).toString().includes("still-here\r\n"),
    );
    stuck.destroy();
  });

  it("kill ends an agent that ignores SIGTERM with SIGKILL after the grace (137)", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: `${FAKE_AGENT_COMMAND} --ignore-term` });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    await waitFor("the prompt", async () => (await client.request("status", { projectRoot: repo.root })).agents[id]?.status === "waiting");
    const result = await client.request("kill", { projectRoot: repo.root, target: id });
    expect(result.killed).toEqual([{ agentId: id, exitCode: 137 }]);
    expect(manifestAgent(repo.root, id)).toMatchObject({ status: "broken", exitCode: 137 });
    expect(isProcessAlive(spawned.agent.pid ?? -1)).toBe(false);
    expect(Buffer.from((await client.request("logs", { agentId: id })).data).toString()).toContain("ignoring SIGTERM");
    // Killing it again reports it as already exited.
    const again = await client.request("kill", { projectRoot: repo.root, target: "all" });
    expect(again.killed).toEqual([]);
    expect(again.skipped[0]).toMatchObject({ agentId: id, reason: expect.stringContaining("already exited") });
    // That second kill let its output go: what is said then is why, not a restart that never was.
    await expect(client.request("logs", { agentId: id })).rejects.toMatchObject({
      code: "AGENT_NOT_FOUND",
      message: `no output held for ${id}: it exited (code 137) and its output has been let go (a second \`pu kill\`, \`pu clean\` or a daemon restart does that)`,
    });
    await expect(client.request("input", { agentId: id, data: Buffer.from("hi") })).rejects.toMatchObject({ code: "INVALID_STATE", message: `${id} has exited (code 137); it takes no input` });
  });

  it("kill refuses to kill its caller and skips the caller and exclusions in bulk", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
      trackAgentPid(s.agent.pid);
      ids.push(s.agentId);
    }
    const [caller, excluded, victim] = ids as [string, string, string];
    await expect(client.request("kill", { projectRoot: repo.root, target: caller, callerAgentId: caller })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: `refusing to kill the calling agent ${caller}`,
    });
    const result = await client.request("kill", { projectRoot: repo.root, target: "all", callerAgentId: caller, exclude: [excluded] });
    expect(result.killed.map((k) => k.agentId)).toEqual([victim]);
    expect(result.skipped.map((s) => s.agentId).sort()).toEqual([caller, excluded].sort());
    const report = await client.request("status", { projectRoot: repo.root });
    expect(report.agents[caller]?.live).toBe(true);
    expect(report.agents[victim]?.status).toBe("broken");
  });

  it("bench and play: suspend keeps the agent, resume restarts it in place", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, command: FAKE_AGENT_COMMAND, name: "bench me" });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    expect(spawned.worktreeId).toBeDefined();
    await expect(client.request("resume", { projectRoot: repo.root, agentId: id })).rejects.toMatchObject({
      code: "INVALID_STATE",
      message: `${id} is not suspended`,
    });

    const suspended = await client.request("suspend", { projectRoot: repo.root, target: id });
    expect(suspended.suspended).toEqual([id]);
    const stored = manifestAgent(repo.root, id);
    expect(stored).toMatchObject({ status: "waiting", suspended: true });
    expect(stored?.suspendedAt).toBeDefined();
    expect(stored?.exitCode).toBeUndefined();
    expect(isProcessAlive(spawned.agent.pid ?? -1)).toBe(false);
    const report = await client.request("status", { projectRoot: repo.root, agentId: id });
    expect(report.worktrees[spawned.worktreeId ?? ""]?.agents[id]).toMatchObject({ status: "waiting", live: false });

    const resumed = await client.request("resume", { projectRoot: repo.root, agentId: id });
    trackAgentPid(resumed.agent.pid);
    expect(resumed.agent.pid).not.toBe(spawned.agent.pid);
    expect(resumed.agent).toMatchObject({ status: "streaming", startedAt: spawned.agent.startedAt });
    expect(resumed.agent.suspended).toBeUndefined();
    await client.request("input", { agentId: id, data: enter("env PWD") });
    await waitFor("the resumed agent to run in its worktree", async () =>
      Buffer.from((await client.request("logs", { agentId: id })).data).toString().includes(`env PWD=${spawned.worktreePath}`),
    );
  });

  it("two resumes of one agent at once start one process, not two", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(spawned.agent.pid);
    const id = spawned.agentId;
    await client.request("suspend", { projectRoot: repo.root, target: id });

    const outcomes = await Promise.allSettled([
      client.request("resume", { projectRoot: repo.root, agentId: id }),
      client.request("resume", { projectRoot: repo.root, agentId: id }),
    ]);
    for (const o of outcomes) if (o.status === "fulfilled") trackAgentPid(o.value.agent.pid);
    for (const stray of findStrayAgents(daemon.home)) trackAgentPid(stray.pid);
    const fulfilled = outcomes.filter((o) => o.status === "fulfilled");
    expect(fulfilled).toHaveLength(1);
    expect(outcomes.find((o) => o.status === "rejected")).toMatchObject({ reason: { code: "INVALID_STATE" } });
    // A second process would be held by nothing: never shown, never stopped by kill or shutdown.
    expect(findStrayAgents(daemon.home).filter((s) => s.agentId === id)).toHaveLength(1);
  });

  it("a resume that cannot start leaves the agent suspended with the reason", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const binDir = path.dirname(FAKE_AGENT);
    const script = path.join(binDir, `fake-agent-copy-${process.pid}.mjs`);
    // The agent's program is a link to node that goes away while the agent is suspended.
    const program = path.join(binDir, `node-link-${process.pid}`);
    copyFileSync(FAKE_AGENT, script);
    const { symlinkSync } = await import("node:fs");
    symlinkSync(process.execPath, program);
    try {
      const repo = await makeProject(client);
      const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: `${program} ${script}` });
      trackAgentPid(spawned.agent.pid);
      await client.request("suspend", { projectRoot: repo.root, target: "all" });
      const m = manifestAgent(repo.root, spawned.agentId);
      expect(m?.suspended).toBe(true);
      rmSync(program, { force: true });
      await expect(client.request("resume", { projectRoot: repo.root, agentId: spawned.agentId })).rejects.toMatchObject({
        code: "RESUME_FAILED",
      });
      expect(manifestAgent(repo.root, spawned.agentId)).toMatchObject({
        suspended: true,
        status: "waiting",
        error: expect.stringContaining("not found"),
      });
    } finally {
      rmSync(script, { force: true });
      rmSync(program, { force: true });
    }
  });

  it("refuses unknown agent types and missing binaries before creating anything", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client, "agents:\n  ghost:\n    command: definitely-not-installed-pu-xyz\n");
    await expect(client.request("spawn", { projectRoot: repo.root, agent: "nope" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/unknown agent type 'nope'.*claude.*terminal.*ghost/),
    });
    const before = manifestAgent(repo.root, "x");
    expect(before).toBeUndefined();
    await expect(client.request("spawn", { projectRoot: repo.root, agent: "ghost", prompt: "do things" })).rejects.toMatchObject({
      code: "SPAWN_FAILED",
      message: "command 'definitely-not-installed-pu-xyz' not found on PATH",
    });
    expect(repo.git(["branch", "--list", "pu/*"])).toBe("");
    const report = await client.request("status", { projectRoot: repo.root });
    expect(report.worktrees).toEqual({});
    expect(report.agents).toEqual({});
  });

  it("refuses a bad agent name before starting a process, so nothing is left running", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    await expect(
      client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND, name: "x".repeat(100) }),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("agent name") });
    // No agent process of this daemon may exist: it would be in no manifest, and its
    // exit could never be recorded (kill all and shutdown would wait on it for ever).
    expect(findStrayAgents(daemon.home)).toEqual([]);
    const report = await client.request("status", { projectRoot: repo.root });
    expect(report.agents).toEqual({});
  });

  it("logs explains when the daemon no longer holds an agent's output", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    await expect(client.request("logs", { agentId: "ag-zzzzzzzz" })).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
  });

  it("shutdown suspends running agents so nothing is lost", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(spawned.agent.pid);
    const viewer = collectEvents(await (await daemon.client("viewer")).openStream("attach", { agentId: spawned.agentId }));
    const watcher = collectEvents(await (await daemon.client("watcher")).openStream("subscribe_status", { projectRoot: repo.root }));
    await client.request("shutdown", {});
    expect((await daemon.exited).code).toBe(0);
    expect(manifestAgent(repo.root, spawned.agentId)).toMatchObject({ status: "waiting", suspended: true });
    // Each open stream is told why its connection ends, as its last frame.
    await Promise.all([viewer.done, watcher.done]);
    expect(viewer.events.at(-1)).toMatchObject({ type: "notice", code: "SHUTDOWN", message: expect.stringContaining(`pu play ${spawned.agentId}`) });
    expect(watcher.events.at(-1)).toMatchObject({ type: "notice", code: "SHUTDOWN" });
    expect(isProcessAlive(spawned.agent.pid ?? -1)).toBe(false);
  });
});
