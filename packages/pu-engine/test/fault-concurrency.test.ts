// Many clients at once: 64 connections x 100 mixed requests while several viewers are
// attached to a chatty agent. Every request must get its own correct answer, and every
// viewer must see the agent's output whole and in order.
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@pu/ipc/client";
import type { EventFrame } from "@pu/ipc/protocol";
import {
  cleanupAll,
  collectEvents,
  FAKE_AGENT_COMMAND,
  makeProject,
  outputBytes,
  startTestDaemon,
  trackAgentPid,
  waitFor,
} from "./helpers/daemon.js";
import { faultSeed, Prng } from "./helpers/fault-procs.js";

const CLIENTS = 64;
const REQUESTS_PER_CLIENT = 100;
const VIEWERS = 4;

afterEach(cleanupAll);

/** Output events must continue exactly where the previous one ended (or after a SKIPPED notice). */
function offsetGaps(events: EventFrame[], startOffset: number): string[] {
  const gaps: string[] = [];
  let expected = startOffset;
  for (const event of events) {
    if (event.type === "notice" && event.code === "SKIPPED") {
      gaps.push(`viewer was skipped ahead ${event.skippedBytes ?? "?"} bytes`);
      expected = -1;
    } else if (event.type === "output") {
      if (expected >= 0 && event.offset !== expected) gaps.push(`output at ${event.offset}, expected ${expected}`);
      expected = event.offset + event.data.length;
    }
  }
  return gaps;
}

/** "" when `seen` is the start of `full`; else where they part, with a little of each. */
function firstDifference(seen: Buffer, full: Buffer): string {
  let at = 0;
  while (at < seen.length && seen[at] === full[at]) at++;
  if (at === seen.length) return "";
  const around = (bytes: Buffer) => JSON.stringify(bytes.subarray(Math.max(0, at - 20), at + 20).toString());
  return `at byte ${at} of ${seen.length}: saw ${around(seen)}, ring holds ${around(full)}`;
}

describe("64 concurrent clients", () => {
  it(`answer ${CLIENTS} x ${REQUESTS_PER_CLIENT} mixed requests correctly while ${VIEWERS} viewers stream a chatty agent`, async () => {
    const seed = faultSeed();
    console.log(`[fault-concurrency] seed=${seed} (replay: PU_FAULT_SEED=${seed})`);
    const rng = new Prng(seed);
    const daemon = await startTestDaemon();
    const setup = await daemon.client("setup");
    const repo = await makeProject(setup);
    const chatty = await setup.request("spawn", {
      projectRoot: repo.root,
      root: true,
      name: "chatty",
      command: "i=0; while :; do i=$((i+1)); echo \"chatter $i\"; sleep 0.01; done",
    });
    const echoer = await setup.request("spawn", { projectRoot: repo.root, root: true, name: "echoer", command: FAKE_AGENT_COMMAND });
    trackAgentPid(chatty.agent.pid);
    trackAgentPid(echoer.agent.pid);
    await waitFor("the echoer's prompt", async () =>
      Buffer.from((await setup.request("logs", { agentId: echoer.agentId })).data).toString().endsWith("> "),
    );

    const viewers = await Promise.all(
      Array.from({ length: VIEWERS }, async (_, i) => {
        const client = await daemon.client(`viewer-${i}`);
        const stream = await client.openStream("attach", { agentId: chatty.agentId, fromOffset: 0 });
        return { stream, collected: collectEvents(stream) };
      }),
    );

    const clients: Client[] = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => daemon.client(`load-${i}`)));
    const errors: string[] = [];
    const mismatches: string[] = [];
    const typedTags: string[] = [];
    let answered = 0;

    const drive = async (client: Client, c: number): Promise<void> => {
      for (let r = 0; r < REQUESTS_PER_CLIENT; r++) {
        const roll = rng.next();
        const label = `client ${c} request ${r}`;
        try {
          if (roll < 0.25) {
            const health = await client.request("health", {});
            if (health.pid !== daemon.pid || health.liveAgentCount < 2) mismatches.push(`${label}: health ${JSON.stringify(health)}`);
          } else if (roll < 0.5) {
            const agentId = rng.pick([chatty.agentId, echoer.agentId]);
            const status = await client.request("status", { projectRoot: repo.root, agentId });
            const view = status.agents[agentId];
            if (status.projectRoot !== repo.root || view?.id !== agentId || !view.live) mismatches.push(`${label}: status for ${agentId} was wrong`);
          } else if (roll < 0.8) {
            const tail = rng.int(64, 8192);
            const logs = await client.request("logs", { agentId: chatty.agentId, tail });
            const text = Buffer.from(logs.data).toString();
            if (logs.data.length > tail || logs.offset + logs.data.length !== logs.endOffset || !text.includes("chatter")) {
              mismatches.push(`${label}: logs (tail ${tail}) gave ${logs.data.length} bytes at ${logs.offset}..${logs.endOffset}`);
            }
          } else {
            // The final "." marks the tag's end: see the check of the answers below.
            const tag = `tag-${c}-${r}-${"x".repeat(rng.int(0, 40))}.`;
            const data = Buffer.from(`${tag}\r`);
            const input = await client.request("input", { agentId: echoer.agentId, data });
            if (input.bytes !== data.length) mismatches.push(`${label}: input reported ${input.bytes} of ${data.length} bytes`);
            typedTags.push(tag);
          }
          answered++;
        } catch (err) {
          errors.push(`${label}: ${(err as Error).message}`);
        }
      }
    };
    await Promise.all(clients.map((client, c) => drive(client, c)));

    expect(errors.slice(0, 10), `seed ${seed}`).toEqual([]);
    expect(mismatches.slice(0, 10), `seed ${seed}`).toEqual([]);
    expect(answered).toBe(CLIENTS * REQUESTS_PER_CLIENT);

    // Every line typed into the echoer came back: no input was lost or cut. The agent answers
    // an unknown command with one write, `unknown: TAG\r\n` (the terminal's own echo of the
    // typed line may be split by other output, so it is not what is checked). The kernel writes
    // that answer's text and its line ending in separate steps, and the echo of input arriving
    // meanwhile can land between them: so what is checked is the whole tag, up to its ".".
    let missing: string[] = [];
    await waitFor(
      `all ${typedTags.length} typed lines answered`,
      async () => {
        const text = Buffer.from((await setup.request("logs", { agentId: echoer.agentId, tail: 1 << 20 })).data).toString();
        missing = typedTags.filter((tag) => !text.includes(`unknown: ${tag}`));
        return missing.length === 0;
      },
      30_000,
      250,
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}: ${missing.length} missing, e.g. ${missing.slice(0, 3).join(" ")}`);
    });

    // Each viewer saw the chatty agent's output in order, and it matches what the ring holds.
    // The agent keeps writing: what the viewers saw is taken first, so that everything in it was
    // in the ring before the ring is read (bytes sent after that read could otherwise reach a
    // viewer's socket before the read's reply reaches this process).
    const seenByViewer = viewers.map((viewer) => {
      viewer.stream.close();
      return outputBytes(viewer.collected.events);
    });
    const full = await setup.request("logs", { agentId: chatty.agentId, tail: 1 << 20 });
    expect(full.offset, "the ring still holds the whole output").toBe(0);
    const fullBytes = Buffer.from(full.data);
    for (const [i, viewer] of viewers.entries()) {
      expect(viewer.stream.result.offset).toBe(0);
      expect(offsetGaps(viewer.collected.events, 0), `viewer ${i}`).toEqual([]);
      const seen = seenByViewer[i]!;
      expect(seen.length, `viewer ${i} received output`).toBeGreaterThan(0);
      expect(seen.length, `viewer ${i} saw no more than the ring holds`).toBeLessThanOrEqual(fullBytes.length);
      expect(firstDifference(seen, fullBytes), `viewer ${i} saw different bytes than the ring holds`).toBe("");
    }
    console.log(`[fault-concurrency] ${answered} replies, ${typedTags.length} inputs echoed, viewers saw ${seenByViewer[0]?.length ?? 0} bytes each`);
  }, 180_000);
});
