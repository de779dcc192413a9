// 10,000 random and adversarial frames against a live daemon over many connections:
// it must keep serving a well-behaved client throughout, still answer health after,
// and not grow its memory without bound.
import { createConnection } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { FrameDecoder, encodeFrame } from "@pu/ipc/frame";
import {
  cleanupAll,
  FAKE_AGENT_COMMAND,
  makeProject,
  startTestDaemon,
  trackAgentPid,
  waitFor,
} from "./helpers/daemon.js";
import { helloFrame, planConnection, type HostileConnectionPlan } from "./helpers/fault-frames.js";
import { faultSeed, Prng, rssBytes } from "./helpers/fault-procs.js";

const TOTAL_FRAMES = 10_000;
const PARALLEL_CONNECTIONS = 12;
const MAX_HUGE_FRAMES = 24;
const MiB = 1024 * 1024;

afterEach(cleanupAll);

interface Outcome {
  replies: Record<string, unknown>[];
  closedByDaemon: boolean;
  sentinelAnswered: boolean | null;
}

/** Sends one plan over a raw socket and reads whatever comes back. */
function runConnection(socketPath: string, plan: HostileConnectionPlan, rng: Prng, sentinelId: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = createConnection(socketPath);
    const decoder = new FrameDecoder();
    const outcome: Outcome = { replies: [], closedByDaemon: false, sentinelAnswered: null };
    const wantsSentinel = plan.sayHello && !plan.broken;
    if (wantsSentinel) outcome.sentinelAnswered = false;
    // Without hello the daemon must refuse and hang up by itself, however loaded it is.
    const first = plan.frames[0];
    const awaitsRefusal = !plan.sayHello && first !== undefined && !first.fatal && first.kind !== "second-hello";
    const waitsForDaemon = wantsSentinel || awaitsRefusal;
    let done = false;
    let idleTimer: NodeJS.Timeout | undefined;
    // A sentinel must come back; a broken connection ends on the daemon's close or a quiet spell.
    const hardTimer = setTimeout(() => finish(), waitsForDaemon ? 20_000 : 5_000);
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(hardTimer);
      if (idleTimer) clearTimeout(idleTimer);
      socket.destroy();
      resolve(outcome);
    };
    const armIdle = () => {
      if (waitsForDaemon) return;
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = setTimeout(finish, 250);
    };
    socket.on("data", (chunk: Buffer) => {
      armIdle();
      try {
        for (const frame of decoder.push(chunk)) {
          outcome.replies.push(frame);
          if (frame.id === sentinelId && frame.type === "ok") {
            outcome.sentinelAnswered = true;
            finish();
          }
        }
      } catch (err) {
        outcome.replies.push({ type: "undecodable-reply", message: (err as Error).message });
      }
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      outcome.closedByDaemon = !done;
      finish();
    });
    socket.on("connect", () => {
      const parts = [...(plan.sayHello ? [helloFrame(`hello-${sentinelId}`)] : []), ...plan.frames.map((f) => f.bytes)];
      if (wantsSentinel) parts.push(encodeFrame({ type: "health", id: sentinelId }));
      const all = Buffer.concat(parts);
      // Cut the stream at random points so frames straddle reads.
      let offset = 0;
      while (offset < all.length) {
        const size = rng.chance(0.5) ? all.length - offset : rng.int(1, Math.min(all.length - offset, 4096));
        socket.write(all.subarray(offset, offset + size));
        offset += size;
      }
      armIdle();
    });
  });
}

describe("frame reassembly", () => {
  it("decodes the same frames however the byte stream is cut in two", () => {
    const frames = [
      { type: "health", id: 1 },
      { type: "logs", id: 2, agentId: "ag-abcdefgh", tail: 10 },
      { type: "input", id: 3, agentId: "ag-abcdefgh", data: Buffer.alloc(300, 0x61) },
    ];
    const stream = Buffer.concat(frames.map((f) => encodeFrame(f)));
    // Cuts right after a length prefix once left the decoder reading a body as a header.
    for (let cut = 1; cut < stream.length; cut++) {
      const decoder = new FrameDecoder();
      const got = [...decoder.push(stream.subarray(0, cut)), ...decoder.push(stream.subarray(cut))];
      expect(got.map((f) => f.id), `cut at ${cut}`).toEqual([1, 2, 3]);
    }
  });
});

describe("hostile frames", () => {
  it(`survive ${TOTAL_FRAMES} random and adversarial frames`, async () => {
    const seed = faultSeed();
    console.log(`[fault-hostile-frames] seed=${seed} (replay: PU_FAULT_SEED=${seed})`);
    const rng = new Prng(seed);
    const daemon = await startTestDaemon();
    const good = await daemon.client("well-behaved");
    const repo = await makeProject(good);
    const agent = await good.request("spawn", { projectRoot: repo.root, root: true, command: FAKE_AGENT_COMMAND });
    trackAgentPid(agent.agent.pid);
    await waitFor("the agent's banner", async () =>
      Buffer.from((await good.request("logs", { agentId: agent.agentId })).data).includes("fake-agent ready"),
    );

    // The well-behaved client keeps asking (and checking) all through the storm.
    let storming = true;
    const goodFailures: string[] = [];
    let goodReplies = 0;
    const goodLoop = (async () => {
      for (let i = 0; storming; i++) {
        try {
          if (i % 3 === 0) {
            const health = await good.request("health", {});
            if (health.pid !== daemon.pid) goodFailures.push(`health named pid ${health.pid}`);
          } else if (i % 3 === 1) {
            const status = await good.request("status", { projectRoot: repo.root });
            if (status.projectRoot !== repo.root || !status.agents[agent.agentId]) goodFailures.push("status lost the agent");
          } else {
            const logs = await good.request("logs", { agentId: agent.agentId, tail: 4096 });
            if (!Buffer.from(logs.data).includes("fake-agent ready")) goodFailures.push("logs lost the banner");
          }
          goodReplies++;
        } catch (err) {
          goodFailures.push(`${(err as Error).message}`);
        }
        await sleep(10);
      }
    })();

    const rssBefore = rssBytes(daemon.pid);
    let sent = 0;
    let huge = 0;
    let connections = 0;
    let idCounter = 1;
    const kinds = new Map<string, number>();
    const problems: string[] = [];
    const nextId = () => idCounter++;

    const worker = async (w: number): Promise<void> => {
      while (sent < TOTAL_FRAMES) {
        const plan = planConnection(rng, nextId, huge < MAX_HUGE_FRAMES);
        sent += plan.frames.length;
        connections++;
        for (const frame of plan.frames) {
          kinds.set(frame.kind, (kinds.get(frame.kind) ?? 0) + 1);
          if (frame.kind.startsWith("huge-")) huge++;
        }
        const sentinelId = `sentinel-${w}-${connections}`;
        const outcome = await runConnection(daemon.socketPath, plan, rng, sentinelId);
        if (outcome.sentinelAnswered === false) {
          problems.push(
            `${sentinelId}: no health reply (${outcome.closedByDaemon ? "closed by the daemon" : "timed out"}; ${outcome.replies.length} replies) after ${plan.frames.map((f) => f.kind).join(",")}`,
          );
        }
        for (const reply of outcome.replies) {
          if (reply.type === "undecodable-reply") problems.push(`${sentinelId}: ${String(reply.message)}`);
          if (reply.type === "error" && reply.code === "INTERNAL") problems.push(`${sentinelId}: INTERNAL ${String(reply.message)}`);
        }
        if (!plan.sayHello && !outcome.replies.some((r) => r.type === "error")) {
          // A request before hello is refused with an error frame (unless the bytes never framed).
          const first = plan.frames[0];
          if (first && !first.fatal && first.kind !== "second-hello") problems.push(`${sentinelId}: no refusal without hello`);
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL_CONNECTIONS }, (_, w) => worker(w)));
    storming = false;
    await goodLoop;

    console.log(
      `[fault-hostile-frames] ${sent} frames over ${connections} connections (${huge} huge); kinds: ${[...kinds]
        .map(([k, n]) => `${k}=${n}`)
        .join(" ")}`,
    );
    expect(problems.slice(0, 20), `seed ${seed}`).toEqual([]);
    expect(goodFailures.slice(0, 20), `seed ${seed}`).toEqual([]);
    expect(goodReplies).toBeGreaterThan(0);

    // Still alive and answering, on the same connection and on a new one.
    expect((await good.request("health", {})).pid).toBe(daemon.pid);
    const fresh = await daemon.client("after-storm");
    expect((await fresh.request("health", {})).pid).toBe(daemon.pid);
    expect(daemon.proc.exitCode).toBeNull();

    // Memory is bounded: whatever the storm held is released (GC may take a moment).
    const bound = 2 * rssBefore + 64 * MiB;
    let rssAfter = rssBytes(daemon.pid);
    await waitFor(`daemon RSS under ${bound / MiB} MiB (before: ${(rssBefore / MiB).toFixed(0)} MiB)`, () => {
      rssAfter = rssBytes(daemon.pid);
      return rssAfter < bound;
    }, 20_000, 250);
    console.log(`[fault-hostile-frames] RSS before ${(rssBefore / MiB).toFixed(1)} MiB, after ${(rssAfter / MiB).toFixed(1)} MiB`);
  }, 180_000);
});
