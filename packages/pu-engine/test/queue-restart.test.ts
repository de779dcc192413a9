// A daemon SIGKILLed at the awkward moments of a ticket, then started again on the same
// PU_HOME: nothing that was done runs twice, nothing waiting is run, nothing dispatched is lost.
// The agents cannot be resumed (the fake agent type has no resume command), so each restart
// starts a new agent in the ticket's worktree — the case where these went wrong.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { OperatorStateSchema, type OperatorState } from "@pu/core/operator-state";
import { listAgents } from "@pu/core/manifest";
import type { Client } from "@pu/ipc/client";
import { findTicket } from "../src/orchestration/queue/tickets.js";
import { cleanupAll, FAKE_AGENT_COMMAND, makeProject, readManifest, startTestDaemon, trackAgentPid, trustProject, waitFor, type TestDaemon } from "./helpers/daemon.js";
import { runGit } from "./helpers/git-repo.js";

afterEach(cleanupAll);

// `stubborn` ignores SIGTERM, so stopping it takes pu's whole kill grace (5 s): the moment after a
// step is recorded done and before the next one starts (or the ticket ends) lasts long enough to
// SIGKILL the daemon in it.
const CONFIG = `defaultAgent: fake
agents:
  fake:
    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}
    interactive: true
  stubborn:
    command: ${JSON.stringify(`${FAKE_AGENT_COMMAND} --ignore-term`)}
    interactive: true
`;

function writeWorkflow(root: string, type: string, yaml: string): void {
  mkdirSync(path.join(root, ".pu", "workflows"), { recursive: true });
  writeFileSync(path.join(root, ".pu", "workflows", `${type}.yaml`), yaml);
}

function readState(home: string): OperatorState {
  return OperatorStateSchema.strict().parse(JSON.parse(readFileSync(path.join(home, "state.json"), "utf8")));
}

function trackAgents(root: string): void {
  for (const { agent } of listAgents(readManifest(root))) trackAgentPid(agent.pid);
}

async function setup(): Promise<{ daemon: TestDaemon; client: Client; root: string }> {
  const daemon = await startTestDaemon();
  const client = await daemon.client();
  const repo = await makeProject(client, CONFIG);
  return { daemon, client, root: repo.root };
}

async function history(root: string, id: string): Promise<[string, string | undefined][]> {
  const ticket = await findTicket(root, id);
  return ((ticket.history ?? []) as { event: string; step?: string }[]).map((h) => [h.event, h.step]);
}

async function waitDone(client: Client, root: string, id: string): Promise<void> {
  await waitFor(`${id} to be done`, async () => (await client.request("ticket_show", { projectRoot: root, ticketId: id })).ticket.state === "done", 30_000);
}

/** The subjects of the commits on the ticket's branch that its base does not have, oldest first. */
function stepCommits(root: string, worktreePath: string): string[] {
  const out = runGit(worktreePath, ["log", "--reverse", "--format=%s", "main..HEAD"]);
  return out === "" ? [] : out.split("\n");
}

/** A gate that commits: each time the step is checked, one more commit on the ticket's branch. */
const commitGate = (step: string) => `{ run: "echo ${step} >> ${step}.txt && git add ${step}.txt && git commit -qm 'step ${step}'" }`;

describe("work queue, daemon SIGKILLed and restarted", () => {
  it("a step recorded done before the SIGKILL is not run again: the ticket goes on with the next step", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(
      root,
      "TASK",
      `steps:
  - name: a
    agent: stubborn
    prompt: "echo a"
    gate: ${commitGate("a")}
  - name: b
    agent: stubborn
    prompt: "echo b"
    gate: ${commitGate("b")}
  - name: c
    agent: fake
    prompt: "write {{OUTPUT_FILE}} c after the restart"
`,
    );
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "once each", ticketType: "TASK" });
    // Step b is recorded done; the stubborn agent's stop (before c's agent starts) holds the ticket there.
    await waitFor("step b recorded done", async () => (await history(root, "TASK-0001")).some(([e, s]) => e === "step done" && s === "b"), 20_000, 5);
    trackAgents(root);
    await daemon.crash();
    const before = readState(daemon.home).agents[0];
    expect(before).toMatchObject({ current_step: "b", completed_steps: ["a", "b"] });

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]).toMatchObject({ ticket_id: "TASK-0001", summary: "c after the restart" });
    expect(stepCommits(root, before?.worktree_path ?? "")).toEqual(["step a", "step b"]);
    expect(await history(root, "TASK-0001")).toEqual([
      ["dispatched", undefined],
      ["step done", "a"],
      ["step done", "b"],
      ["continued after a daemon restart", "c"],
      ["step done", "c"],
      ["done", undefined],
    ]);
  }, 60_000);

  it("a ticket SIGKILLed after its last step was recorded done is finished on restart, not worked again", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(
      root,
      "TASK",
      `steps:
  - name: a
    agent: stubborn
    prompt: "echo a"
    gate: ${commitGate("a")}
  - name: b
    agent: stubborn
    prompt: "write {{OUTPUT_FILE}} b before the restart"
    gate: ${commitGate("b")}
`,
    );
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "finish me", ticketType: "TASK" });
    // The last step is recorded done; stopping the stubborn agent holds the ticket before its end is.
    await waitFor("step b recorded done", async () => (await history(root, "TASK-0001")).some(([e, s]) => e === "step done" && s === "b"), 20_000, 5);
    trackAgents(root);
    await daemon.crash();
    const before = readState(daemon.home).agents[0];
    expect(before).toMatchObject({ current_step: "b", completed_steps: ["a", "b"] });

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]).toMatchObject({ ticket_id: "TASK-0001", summary: "b before the restart" });
    expect(stepCommits(root, before?.worktree_path ?? "")).toEqual(["step a", "step b"]);
    expect(await history(root, "TASK-0001")).toEqual([
      ["dispatched", undefined],
      ["step done", "a"],
      ["step done", "b"],
      ["continued after a daemon restart", undefined],
      ["done", undefined],
    ]);
  }, 60_000);

  it("a ticket waiting for a review when the daemon was SIGKILLed waits again (its step not run again) and goes on when approved", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(
      root,
      "TASK",
      `steps:
  - name: one
    prompt: "echo one"
    gate: ${commitGate("one")}
  - name: two
    prompt: "echo two"
    gate: ${commitGate("two")}
    review: plan
  - name: three
    prompt: "write {{OUTPUT_FILE}} approved after the restart"
`,
    );
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "patient", ticketType: "TASK" });
    await waitFor("state.json to hold the review", () => readState(daemon.home).agents[0]?.review_state === "pending_plan");
    trackAgents(root);
    await daemon.crash();
    const before = readState(daemon.home).agents[0];
    const worktreePath = before?.worktree_path ?? "";

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    const review = await waitFor("the review after the restart", async () => (await client2.request("review_list", { projectRoot: root })).reviews.find((r) => r.ticketId === "TASK-0001"));
    expect(review).toMatchObject({ step: "two", reviewState: "pending_plan" });
    // Its agent is started again (a new one: this type cannot be resumed), and it stays waiting.
    await waitFor("the ticket's new agent", () => readState(restarted.home).agents[0]?.session_name !== before?.session_name);
    trackAgents(root);
    expect(readState(restarted.home).agents[0]).toMatchObject({ status: "awaiting_input", review_state: "pending_plan", current_step: "two" });
    expect(stepCommits(root, worktreePath)).toEqual(["step one", "step two"]);

    await client2.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" });
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]).toMatchObject({ ticket_id: "TASK-0001", summary: "approved after the restart" });
    expect(stepCommits(root, worktreePath)).toEqual(["step one", "step two"]);
    expect((await history(root, "TASK-0001")).filter(([e]) => e === "step done")).toEqual([
      ["step done", "one"],
      ["step done", "two"],
      ["step done", "three"],
    ]);
  }, 60_000);

  it("a ticket SIGKILLed just after its dispatch, before its agent started, goes back to the queue and runs in the worktree its dispatch began", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "SPIKE", `steps:\n  - name: explore\n    prompt: "write {{OUTPUT_FILE}} explored"\n`);
    await trustProject(client, root);
    // git runs this while it makes the ticket's worktree (the first time only): the daemon is then
    // between the dispatch (state.json: starting, no worktree) and its agent's start.
    const mark = path.join(path.dirname(root), "worktree-being-made");
    const hook = path.join(root, ".git", "hooks", "post-checkout");
    writeFileSync(hook, `#!/bin/sh\n[ -e '${mark}' ] && exit 0\ntouch '${mark}'\nsleep 2\n`);
    chmodSync(hook, 0o755);
    await client.request("ticket_create", { projectRoot: root, title: "x", ticketType: "SPIKE" });
    await waitFor("the ticket's worktree to be in the making", () => existsSync(mark), 20_000, 5);
    await daemon.crash();
    expect(readState(daemon.home).agents[0]).toMatchObject({ ticket_id: "SPIKE-0001", status: "starting", session_context_ref: null });
    const halfMade = runGit(root, ["worktree", "list", "--porcelain"])
      .split("\n\n")
      .find((entry) => entry.includes("branch refs/heads/pu/spike-0001"));
    const halfMadePath = halfMade?.match(/^worktree (.*)$/m)?.[1];
    expect(halfMadePath).toBeDefined();

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    await waitDone(client2, root, "SPIKE-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]).toMatchObject({ ticket_id: "SPIKE-0001", summary: "explored" });
    expect((await history(root, "SPIKE-0001")).map(([e]) => e)).toEqual(["dispatched", "requeued after a daemon restart", "dispatched", "step done", "done"]);
    // No second worktree, and none left over that nobody owns: the ticket worked in the one its
    // first dispatch made.
    const worktrees = Object.values(readManifest(root).worktrees);
    expect(worktrees.map((wt) => wt.path)).toEqual([halfMadePath]);
    expect(Object.values(worktrees[0]?.agents ?? {}).map((a) => a.env?.PU_TICKET_ID)).toEqual(["SPIKE-0001"]);
  }, 60_000);

  it("a reviewer's reason survives a SIGKILL between the reject and the step's re-run: the step sent back to is typed with it", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(
      root,
      "TASK",
      `steps:
  - name: a
    agent: fake
    prompt: "echo a"
  - name: b
    agent: stubborn
    prompt: "echo b"
    review: plan
  - name: c
    agent: fake
    prompt: "write {{OUTPUT_FILE}} c ran"
`,
    );
    await trustProject(client, root);
    await client.request("ticket_create", { projectRoot: root, title: "rework", ticketType: "TASK" });
    await waitFor("the review of b", () => readState(daemon.home).agents[0]?.review_state === "pending_plan", 20_000);
    await client.request("review_reject", { projectRoot: root, ticketId: "TASK-0001", reason: "use the other approach", step: "a" });
    // The reject is recorded (a is current again); going back to a's agent type stops the stubborn
    // agent first, which takes pu's kill grace: the daemon dies before a is typed again.
    await waitFor("the reject recorded", () => readState(daemon.home).agents[0]?.current_step === "a", 10_000, 5);
    trackAgents(root);
    await daemon.crash();
    expect((await history(root, "TASK-0001")).map(([e]) => e)).not.toContain("continued after a daemon restart");

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    await waitFor("the review of b again", () => readState(restarted.home).agents[0]?.review_state === "pending_plan", 30_000);
    trackAgents(root);
    const outputs = await Promise.all(
      // The agents before the SIGKILL keep no output here (a restart lets it go).
      listAgents(readManifest(root)).map(async ({ agent }) =>
        Buffer.from((await client2.request("logs", { agentId: agent.id }).catch(() => ({ data: new Uint8Array() }))).data).toString("utf8"),
      ),
    );
    const told = outputs.filter((o) => o.includes('Review: changes requested (back to step "a"): use the other approach'));
    expect(told, "the agent of step a after the restart is told the reviewer's reason").toHaveLength(1);
    expect(readState(restarted.home).agents[0]?.rework_request, "answered once a is done").toBeUndefined();

    await client2.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" });
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]).toMatchObject({ ticket_id: "TASK-0001", summary: "c ran" });
    expect((await history(root, "TASK-0001")).filter(([e]) => e === "step done" || e === "rejected")).toEqual([
      ["step done", "a"],
      ["rejected", "b"],
      ["step done", "a"],
      ["step done", "b"],
      ["step done", "c"],
    ]);
  }, 90_000);

  it("a ticket that waited on an unreadable trust.json before its first step, SIGKILLed, runs that step once when approved after the restart", async () => {
    const { daemon, client, root } = await setup();
    writeWorkflow(root, "TASK", `steps:\n  - name: one\n    prompt: "echo one"\n    gate: ${commitGate("one")}\n  - name: two\n    prompt: "write {{OUTPUT_FILE}} two ran"\n`);
    await trustProject(client, root);
    // git runs this while it makes the ticket's worktree: trust.json is spoiled after the dispatch
    // read it and before the first step checks the ticket against it.
    const mark = path.join(path.dirname(root), "worktree-being-made");
    const hook = path.join(root, ".git", "hooks", "post-checkout");
    writeFileSync(hook, `#!/bin/sh\n[ -e '${mark}' ] && exit 0\ntouch '${mark}'\nsleep 2\n`);
    chmodSync(hook, 0o755);
    const trustFile = path.join(daemon.home, "trust.json");
    await client.request("ticket_create", { projectRoot: root, title: "x", ticketType: "TASK" });
    await waitFor("the ticket's worktree to be in the making", () => existsSync(mark), 20_000, 5);
    const trusted = readFileSync(trustFile, "utf8");
    writeFileSync(trustFile, '{"version":1,"projects":');
    await waitFor("the ticket to wait on trust.json", () => readState(daemon.home).agents[0]?.last_message?.includes("step one has not started: trust.json cannot be read"));
    trackAgents(root);
    writeFileSync(trustFile, trusted);
    await daemon.crash();
    const before = readState(daemon.home).agents[0];
    expect(before).toMatchObject({ current_step: "one", completed_steps: [] });

    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    await waitFor("the ticket's new agent", () => readState(restarted.home).agents[0]?.session_name !== before?.session_name);
    trackAgents(root);
    // Whether the approval lands while the ticket still waits, or after the restarted daemon
    // already went on with the step (then it is refused or dropped), step one must run once.
    await client2.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" }).catch((error: unknown) => {
      expect((error as { code?: string }).code, String(error)).toBeDefined();
    });
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]).toMatchObject({ ticket_id: "TASK-0001", summary: "two ran" });
    expect(stepCommits(root, before?.worktree_path ?? ""), "step one ran, once").toEqual(["step one"]);
    expect((await history(root, "TASK-0001")).filter(([e]) => e !== "continued after a daemon restart" && e !== "approved")).toEqual([
      ["dispatched", undefined],
      ["step done", "one"],
      ["step done", "two"],
      ["done", undefined],
    ]);
  }, 60_000);

  it("an approval given while a restart picks up a ticket that then waits for pu trust does not answer its step's review later", async () => {
    const { daemon, client, root } = await setup();
    // Half a megabyte of comment: reading the workflow again (as the restart does before it finds
    // trust.json spoiled) takes long enough for an approval to arrive in between every time.
    const padding = "# padding to make the workflow slow to read\n".repeat(12_000);
    writeWorkflow(
      root,
      "TASK",
      `${padding}steps:\n  - name: one\n    prompt: "echo one"\n    gate: ${commitGate("one")}\n    review: plan\n  - name: two\n    prompt: "write {{OUTPUT_FILE}} two ran"\n`,
    );
    await trustProject(client, root);
    // trust.json spoiled while the ticket's worktree is made: its first step waits on the file.
    const mark = path.join(path.dirname(root), "worktree-being-made");
    const hook = path.join(root, ".git", "hooks", "post-checkout");
    writeFileSync(hook, `#!/bin/sh\n[ -e '${mark}' ] && exit 0\ntouch '${mark}'\nsleep 2\n`);
    chmodSync(hook, 0o755);
    const trustFile = path.join(daemon.home, "trust.json");
    await client.request("ticket_create", { projectRoot: root, title: "x", ticketType: "TASK" });
    await waitFor("the ticket's worktree to be in the making", () => existsSync(mark), 20_000, 5);
    const trusted = readFileSync(trustFile, "utf8");
    writeFileSync(trustFile, '{"version":1,"projects":');
    await waitFor("the ticket to wait on trust.json", () => readState(daemon.home).agents[0]?.last_message?.includes("step one has not started: trust.json cannot be read"));
    trackAgents(root);
    await daemon.crash();

    // Restarted with the file still spoiled: approved (for "step one has not started") as soon as
    // the daemon answers, while it picks the ticket up — which then waits for the file and `pu trust`.
    const restarted = await startTestDaemon(daemon.home);
    const client2 = await restarted.client();
    let approved = false;
    for (let attempt = 0; attempt < 1000 && !approved; attempt++) {
      const answer = await client2.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" }).then(
        () => "approved",
        (err: { code?: string }) => err.code,
      );
      approved = answer === "approved";
      if (answer === "INVALID_STATE") break;
    }
    expect(approved, "the approval reached the ticket before it waited for pu trust").toBe(true);
    await waitFor("the ticket to wait for pu trust", () => readState(restarted.home).agents[0]?.last_message?.startsWith("could not continue after a restart"));
    writeFileSync(trustFile, trusted);
    await trustProject(client2, root);

    // Step one runs, then waits for its own review: the earlier approval does not answer it.
    await waitFor("step one's plan review", () => readState(restarted.home).agents[0]?.review_state === "pending_plan", 30_000);
    trackAgents(root);
    expect((await history(root, "TASK-0001")).filter(([e]) => e === "step done")).toEqual([]);
    await client2.request("review_approve", { projectRoot: root, ticketId: "TASK-0001" });
    await waitDone(client2, root, "TASK-0001");
    trackAgents(root);
    expect(readState(restarted.home).completed[0]).toMatchObject({ ticket_id: "TASK-0001", summary: "two ran" });
  }, 60_000);
});

