// The work queue against hostile and broken files (issue 21): a hand-dropped ticket that reuses a
// finished ticket's id, a 20 MB ticket, an id with 23 digits, unknown agent types, control
// characters in titles, notes and reasons, a corrupt state.json, a bad $PU_HOME/config.yaml, and
// agents the queue stopped after their work showing as finished rather than failed.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_AGENT_COMMAND, PuSandbox } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

interface TicketShow {
  ticket: { id: string; title: string; state: string; description?: string; history?: { event: string }[] };
  completed?: { summary: string };
}
interface TicketList {
  tickets: Record<string, unknown>[];
  problems: { file: string; message: string }[];
}
interface StateJson {
  completed: { ticket_id: string }[];
  project_llm_stats?: Record<string, { preferred_tool?: string }>;
}

const ESC = "\x1b";

/** A ticket as a person would write it by hand. */
function ticketText(id: string, fields: { title?: string; priority?: string; extra?: string; body?: string } = {}): string {
  const type = id.split("-")[0];
  return [
    "---",
    `id: ${id}`,
    `type: ${type}`,
    `title: ${fields.title ?? `"hand-written ${id}"`}`,
    `priority: ${fields.priority ?? "P2"}`,
    'created_at: "2020-01-01T00:00:00Z"',
    ...(fields.extra ? [fields.extra] : []),
    "---",
    "",
    fields.body ?? "dropped by hand",
    "",
  ].join("\n");
}

/** The project with the scripted agent as its default and quick workflows, trusted. */
async function queueSandbox(prefix: string): Promise<PuSandbox> {
  const sb = new PuSandbox(prefix);
  await sb.puJson(["init"]);
  const pu = path.join(sb.root, ".pu");
  writeFileSync(path.join(pu, "config.yaml"), `defaultAgent: fake\nagents:\n  fake:\n    command: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n    interactive: true\n`);
  mkdirSync(path.join(pu, "workflows"), { recursive: true });
  writeFileSync(path.join(pu, "workflows", "TASK.yaml"), `steps:\n  - name: do\n    prompt: "write {{OUTPUT_FILE}} did {{TITLE}}"\n`);
  writeFileSync(path.join(pu, "workflows", "REV.yaml"), `steps:\n  - name: plan\n    prompt: "echo planned {{TITLE}}"\n    review: plan\n`);
  await sb.ok(["trust"]);
  return sb;
}

describe("queue hardening: ticket files", { timeout: 240_000 }, () => {
  let sb: PuSandbox;
  let tickets: string;
  const file = (state: string, name: string) => path.join(tickets, state, name);
  const stateJson = () => JSON.parse(readFileSync(path.join(sb.home, "state.json"), "utf8")) as StateJson;
  const doneTicket = (id: string) =>
    waitFor(`${id} to be done`, async () => {
      const shown = await sb.puJson<TicketShow>(["ticket", "show", id]);
      return shown.ticket.state === "done" && shown.completed ? shown : undefined;
    }, 60_000);
  /** Queues a ticket through pu and waits until it is done: every dispatch pass has looked at the queue meanwhile. */
  const runOne = async (title: string) => {
    const created = await sb.puJson<{ ticket: { id: string } }>(["ticket", "create", title, "--type", "TASK"]);
    return doneTicket(created.ticket.id);
  };

  beforeAll(async () => {
    sb = await queueSandbox("pu-e2e-queue-hard-");
    tickets = path.join(sb.root, ".pu", "tickets");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("a dropped ticket reusing a done ticket's id is a problem naming both files: never run, nothing overwritten", async () => {
    const first = await runOne("the original");
    expect(first.ticket.id).toBe("TASK-0001");
    const done = file("done", "TASK-0001.md");
    const doneBefore = readFileSync(done, "utf8");
    const intruder = file("queue", "TASK-0001.md");
    // P0 and older than anything: the first ticket dispatch would take.
    writeFileSync(intruder, ticketText("TASK-0001", { title: "intruder", priority: "P0" }));
    const intruderBefore = readFileSync(intruder, "utf8");
    await sb.ok(["trust"]);

    const problem = `${intruder}: id TASK-0001 is already used by ${done}`;
    const listed = await sb.pu(["ticket", "list"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`problem: ${problem}`);
    expect(listed.stdout).toMatch(/TASK-0001\s+done\s+P2\s+\S+\s+the original/);

    const second = await runOne("the next one");
    expect(second.ticket.id).toBe("TASK-0002");
    expect(readFileSync(done, "utf8")).toBe(doneBefore);
    expect(readFileSync(intruder, "utf8")).toBe(intruderBefore);
    expect(stateJson().completed.filter((c) => c.ticket_id === "TASK-0001")).toHaveLength(1);
    const shown = await sb.puJson<TicketShow>(["ticket", "show", "TASK-0001"]);
    expect(shown.ticket).toMatchObject({ title: "the original", state: "done" });
    expect(await sb.ok(["queue"])).toContain(`problem: ${problem}`);
    rmSync(intruder);
  });

  it("agents the queue stopped after their work show as finished by pu, not as failures, across a restart", async () => {
    const finishedRow = async () => {
      const status = await sb.status();
      const wt = Object.values(status.worktrees).find((w) => w.name === "task-0001");
      const agent = wt && Object.values(wt.agents)[0];
      expect(agent, "the agent of TASK-0001").toBeDefined();
      return agent!;
    };
    const agent = await finishedRow();
    expect(agent).toMatchObject({ status: "broken", finishedBy: "queue" });
    const row = (await sb.ok(["status"])).split("\n").find((line) => line.includes(agent.id));
    expect(row).toContain("broken (done)");
    expect(row).not.toMatch(/exit 1\d\d/);

    await sb.ok(["daemon", "restart"]);
    expect(await finishedRow()).toMatchObject({ id: agent.id, finishedBy: "queue" });
    expect((await sb.ok(["status"])).split("\n").find((line) => line.includes(agent.id))).toContain("broken (done)");

    // A person's kill is still a kill.
    const spawned = await sb.spawnAgent(["--agent", "fake", "--root"]);
    await sb.ok(["kill", spawned.agentId]);
    const killed = await sb.agent(spawned.agentId);
    expect(killed.finishedBy).toBeUndefined();
    expect((await sb.ok(["status"])).split("\n").find((line) => line.includes(spawned.agentId))).toMatch(/broken\s.*exit 1\d\d/);
  });

  it("a 20 MB ticket is refused like any bad file: lists and the queue still answer, it never runs", async () => {
    const big = file("queue", "TASK-0050.md");
    writeFileSync(big, ticketText("TASK-0050", { priority: "P0", body: "x".repeat(20_000_000) }));
    const size = statSync(big).size;
    await sb.ok(["trust"]);
    const listed = await sb.pu(["ticket", "list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`problem: ${big}: \\d+(\\.\\d)? MB, over the 1 MiB limit of a ticket file`));
    const queue = await sb.pu(["queue"]);
    expect(queue.code, queue.stderr).toBe(0);
    expect(queue.stdout).toContain(`problem: ${big}`);
    const shown = await sb.pu(["ticket", "show", "TASK-0050"]);
    expect(shown.code).toBe(1);
    expect(shown.stderr).toMatch(/^pu: .*TASK-0050\.md: [\d.]+ MB, over the 1 MiB limit of a ticket file[^\n]*\n$/);

    await runOne("after the big one");
    expect(statSync(big).size).toBe(size);
    rmSync(big);

    const description = path.join(sb.base, "two-megabytes.md");
    writeFileSync(description, "y".repeat(2_000_000));
    const refused = await sb.pu(["ticket", "create", "too big", "--file", description]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^pu: [^\n]*over the 1 MiB limit of a ticket file[^\n]*\n$/);
  });

  it("list replies carry no bodies: 17 tickets of almost 1 MiB each list fine (16 MiB is the frame limit)", async () => {
    await sb.ok(["queue", "pause"]);
    const description = path.join(sb.base, "almost-a-megabyte.md");
    writeFileSync(description, "z".repeat(1_000_000));
    const ids: string[] = [];
    for (let i = 0; i < 17; i++) ids.push((await sb.puJson<{ ticket: { id: string } }>(["ticket", "create", `large ${i}`, "--file", description])).ticket.id);
    const list = await sb.puJson<TicketList>(["ticket", "list", "--state", "queue"]);
    expect(list.tickets.map((t) => t.id)).toEqual(ids);
    for (const t of list.tickets) expect(t).not.toHaveProperty("description");
    const queue = await sb.puJson<{ waiting: Record<string, unknown>[] }>(["queue"]);
    expect(queue.waiting).toHaveLength(17);
    for (const t of queue.waiting) expect(t).not.toHaveProperty("description");
    const shown = await sb.puJson<TicketShow>(["ticket", "show", ids[0]!]);
    expect(shown.ticket.description?.length).toBeGreaterThanOrEqual(1_000_000);
    for (const id of ids) await sb.ok(["ticket", "cancel", id]);
    await sb.ok(["queue", "resume"]);
  });

  it("a dropped ticket with a 23-digit number is reported and does not break numbering", async () => {
    const huge = file("queue", "TASK-99999999999999999999999.md");
    writeFileSync(huge, ticketText("TASK-99999999999999999999999", { priority: "P3" }));
    const created = await sb.pu(["ticket", "create", "numbered as usual", "--type", "TASK", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    expect((JSON.parse(created.stdout) as { ticket: { id: string } }).ticket.id).toMatch(/^TASK-00\d\d$/);
    const listed = await sb.ok(["ticket", "list"]);
    expect(listed).toContain(`problem: ${huge}: id: must be TYPE-NNNN with 4 to 9 digits`);
    rmSync(huge);
  });

  it("an unknown agent type is refused when asked: stats prefer and ticket create --agent (exit 2, the known types named)", async () => {
    const before = stateJson().project_llm_stats?.[sb.root]?.preferred_tool;
    const prefer = await sb.pu(["stats", "prefer", "nosuch"]);
    expect(prefer.code).toBe(2);
    expect(prefer.stderr).toMatch(/^pu: unknown agent type 'nosuch' \(known: [^\n]*\bterminal\b[^\n]*\bfake\b[^\n]*\)\n$/);
    expect(stateJson().project_llm_stats?.[sb.root]?.preferred_tool).toBe(before);

    const queued = readdirSync(path.join(tickets, "queue"));
    const create = await sb.pu(["ticket", "create", "never queued", "--agent", "nosuch"]);
    expect(create.code).toBe(2);
    expect(create.stderr).toMatch(/^pu: unknown agent type 'nosuch' \(known: [^\n]*\bfake\b[^\n]*\)\n$/);
    expect(readdirSync(path.join(tickets, "queue"))).toEqual(queued);
  });

  it("control characters: refused in titles and reasons, escaped in every line pu prints", async () => {
    const title = await sb.pu(["ticket", "create", `bad${ESC}[2Jtitle`]);
    expect(title.code).toBe(2);
    expect(title.stderr).toMatch(/^pu: .*control character \\x1b[^\n]*\n$/);
    expect(title.stderr).not.toContain(ESC);

    // Written by hand, straight into done/ (so nothing runs): escapes in the history and the body.
    const payload = `${ESC}]0;pwned\x07${ESC}[2J`;
    const yamlPayload = "\\e]0;pwned\\a\\e[2J";
    writeFileSync(
      file("done", "TASK-0060.md"),
      ticketText("TASK-0060", { extra: `history:\n  - { at: "2020-01-01T00:00:00Z", event: done, note: "note ${yamlPayload}" }`, body: `body ${payload}` }),
    );
    const shown = await sb.pu(["ticket", "show", "TASK-0060"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    expect(shown.stdout).toContain("note \\x1b]0;pwned\\x07\\x1b[2J");
    expect(shown.stdout).toContain("body \\x1b]0;pwned\\x07\\x1b[2J");

    // A title with them is a bad file (it would be typed into an agent); the problem line is escaped.
    writeFileSync(file("done", "TASK-0061.md"), ticketText("TASK-0061", { title: `"evil ${yamlPayload}"` }));
    const listed = await sb.pu(["ticket", "list"]);
    expect(listed.stdout).not.toContain(ESC);
    expect(listed.stdout).toMatch(/problem: .*TASK-0061\.md: title: .*control character \\x1b/);
    const bad = await sb.pu(["ticket", "show", "TASK-0061"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).not.toContain(ESC);

    // Ids echoed in errors: escaped, and as typed (not upper-cased).
    const id = await sb.pu(["ticket", "show", `x${ESC}[2J`]);
    expect(id.code).toBe(2);
    expect(id.stderr).toContain("x\\x1b[2J");
    expect(id.stderr).not.toContain(ESC);
    const traversal = await sb.pu(["ticket", "cancel", "../../x"]);
    expect(traversal.code).toBe(2);
    expect(traversal.stderr).toContain('"../../x"');

    // A reason is typed into the agent: refused like pu send's text.
    await sb.ok(["ticket", "create", "needs a look", "--type", "REV"]);
    await waitFor("REV-0001 to wait for its review", async () => {
      const r = await sb.puJson<{ reviews: { ticketId: string }[] }>(["review"]);
      return r.reviews.some((x) => x.ticketId === "REV-0001");
    }, 60_000);
    const reject = await sb.pu(["review", "reject", "REV-0001", "--reason", `bad${ESC}[2Jreason`]);
    expect(reject.code).toBe(2);
    expect(reject.stderr).toMatch(/^pu: .*control character \\x1b[^\n]*\n$/);
    expect((await sb.puJson<{ reviews: { ticketId: string }[] }>(["review"])).reviews.map((r) => r.ticketId)).toContain("REV-0001");
    await sb.ok(["review", "approve", "REV-0001"]);
    await doneTicket("REV-0001");
  });

  it("a directory named like a ticket is reported with its path; --file naming no file is not found (exit 3)", async () => {
    const dir = file("queue", "TASK-0070.md");
    mkdirSync(dir);
    const listed = await sb.ok(["ticket", "list"]);
    expect(listed).toContain(`problem: ${dir}: not a regular file`);
    rmSync(dir, { recursive: true });
    const missing = await sb.pu(["ticket", "create", "from nowhere", "--file", path.join(sb.base, "nonexistent.md")]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/^pu: cannot read --file .*nonexistent\.md: no such file\n$/);
    expect(existsSync(file("queue", "TASK-0071.md"))).toBe(false);
  });
});

describe("queue hardening: state.json and config.yaml", { timeout: 180_000 }, () => {
  let sb: PuSandbox;
  const homeConfig = () => path.join(sb.home, "config.yaml");
  /**
   * The config replaced in one step, as an editor saving it would: a plain write truncates the
   * file first, and a daemon reading it in that instant sees an empty (valid) config and may
   * start the ticket this test keeps waiting.
   */
  const replaceHomeConfig = (text: string) => {
    writeFileSync(`${homeConfig()}.new`, text);
    renameSync(`${homeConfig()}.new`, homeConfig());
  };

  beforeAll(async () => {
    sb = await queueSandbox("pu-e2e-queue-state-");
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("a project's queue.maxParallel is named as having no effect", async () => {
    const config = path.join(sb.root, ".pu", "config.yaml");
    writeFileSync(config, `${readFileSync(config, "utf8")}queue:\n  maxParallel: 2\n  maxPerProject: 2\n`);
    const queue = await sb.pu(["queue"]);
    expect(queue.code, queue.stderr).toBe(0);
    expect(queue.stdout).toContain(`warning: ${config}: queue.maxParallel has no effect here; it is read from ${homeConfig()} only`);
    expect(queue.stdout).not.toContain("maxPerProject has no effect");
  });

  it("a bad $PU_HOME/config.yaml stops the queue and says so; fixed and resumed, the queue goes on", async () => {
    replaceHomeConfig("queue:\n  maxParallel: 0\n");
    const stopped = await sb.pu(["queue"]);
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toMatch(new RegExp(`^queue STOPPED: config ${homeConfig()}: queue\\.maxParallel: [^\\n]+`, "m"));
    expect(stopped.stdout).not.toContain("queue running");
    expect(stopped.stderr).toMatch(new RegExp(`^pu: the queue is stopped: config ${homeConfig()}: queue\\.maxParallel: [^\\n]+pu queue resume[^\\n]*\\n$`));
    const json = await sb.pu(["queue", "--json"]);
    expect(json.code).toBe(1);
    expect((JSON.parse(json.stdout) as { configError?: string }).configError).toContain("queue.maxParallel");

    const created = await sb.pu(["ticket", "create", "waits for the fix"]);
    expect(created.code).toBe(0);
    expect(created.stderr).toContain("the queue is stopped");

    replaceHomeConfig("queue:\n  maxParallel: [1\n");
    const yaml = await sb.pu(["queue"]);
    expect(yaml.code).toBe(1);
    expect(yaml.stdout).toMatch(/^queue STOPPED: config .*config\.yaml: not valid YAML/m);
    expect((await sb.puJson<{ ticket: { state: string } }>(["ticket", "show", "TASK-0001"])).ticket.state).toBe("queue");

    replaceHomeConfig("queue:\n  maxParallel: 1\n");
    await sb.ok(["queue", "resume"]);
    await waitFor("TASK-0001 to be done", async () => (await sb.puJson<{ ticket: { state: string } }>(["ticket", "show", "TASK-0001"])).ticket.state === "done", 60_000);
    expect(await sb.ok(["queue"])).toMatch(/^queue running; slots 0 used, 1 free of 1$/m);
  });

  it("a corrupt state.json: pu queue and pu stats say the queue is stopped and why (exit 1)", async () => {
    await sb.ok(["daemon", "stop"]);
    const file = path.join(sb.home, "state.json");
    writeFileSync(file, "{ not json");
    const queue = await sb.pu(["queue"]);
    expect(queue.code).toBe(1);
    expect(queue.stdout).toMatch(new RegExp(`^queue STOPPED: ${file}`, "m"));
    expect(queue.stdout).not.toMatch(/queue running|slots \d/);
    expect(queue.stderr).toMatch(new RegExp(`^pu: the queue is stopped: ${file}: not valid JSON[^\\n]*pu daemon restart[^\\n]*\\n$`));
    const stats = await sb.pu(["stats"]);
    expect(stats.code).toBe(1);
    expect(stats.stdout).not.toContain("no agent runs recorded yet");
    expect(stats.stderr).toMatch(new RegExp(`^pu: ${file}[^\\n]*the queue is stopped[^\\n]*\\n$`));
    expect(readFileSync(file, "utf8")).toBe("{ not json");
  });
});
