// A cloned repository can carry, besides agent types and gates, every other thing that makes
// pu type into a terminal or start a program: a ticket committed in the queue, a workflow
// (its steps' agents and prompts, its launch mode), a schedule, plan role settings and
// templates, a default trigger's inject, and a model value that would be read as a flag.
// None of them runs until the person runs `pu trust`; after it, each one does (the flag-like
// model never does).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PuSandbox } from "../helpers/pu-sandbox.js";
import { waitFor } from "../helpers/wait-for.js";

interface QueueJson {
  waiting: { id: string }[];
  problems: { file: string; message: string }[];
}
interface TrustShow {
  recorded: number;
  items: { key: string; trusted: boolean; runs: string }[];
}
interface ScheduleList {
  definitions: { name: string; details?: { heldRuns?: number } }[];
}

function ticketText(id: string, body: string, extra: string[] = []): string {
  return ["---", `id: ${id}`, `type: ${id.split("-")[0]}`, `title: "committed ${id}"`, "priority: P1", 'created_at: "2020-01-01T00:00:00Z"', ...extra, "---", "", body, ""].join("\n");
}

describe("trust: every route a cloned repository could run waits for pu trust", { timeout: 240_000 }, () => {
  let sb: PuSandbox;
  let clone: string;
  let marks: string;
  const ran = (name: string) => existsSync(path.join(marks, name));
  const pu = (args: string[]) => sb.pu(args, { cwd: clone });
  const puJson = async <T>(args: string[]): Promise<T> => {
    const r = await pu([...args, "--json"]);
    expect(r.code, `pu ${args.join(" ")}: ${r.stderr}`).toBe(0);
    return JSON.parse(r.stdout) as T;
  };

  beforeAll(async () => {
    sb = new PuSandbox("pu-e2e-trust-routes-");
    marks = path.join(sb.base, "marks");
    const mark = (name: string) => path.join(marks, name);
    // The repository as its author committed it; the person only clones it and runs pu there.
    sb.commitFiles(
      {
        ".pu/config.yaml": [
          "defaultTrigger: nudge",
          "plan:",
          "  agents:",
          "    explorer: terminal",
          "",
        ].join("\n"),
        ".pu/triggers/nudge.yaml": `on: agent_idle\nsequence:\n  - inject: "mkdir -p ${marks} && touch ${mark("inject-ran")}"\n`,
        ".pu/workflows/CHORE.yaml": [
          "launch_mode: yolo",
          "steps:",
          "  - name: run",
          "    agent: terminal",
          `    prompt: "mkdir -p ${marks} && touch ${mark("workflow-ran")}"`,
          "",
        ].join("\n"),
        ".pu/schedules/often.yaml": [
          'recurrence: "*/2 * * * * *"',
          'startAt: "2020-01-01T00:00:00Z"',
          "trigger:",
          `  inlinePrompt: "mkdir -p ${marks} && touch ${mark("schedule-ran")}"`,
          "  agent: terminal",
          "root: true",
          "",
        ].join("\n"),
        ".pu/templates/plan-explorer.md": `mkdir -p ${marks} && touch ${mark("plan-ran")}\n`,
        ".pu/tickets/queue/TASK-0001.md": ticketText("TASK-0001", `mkdir -p ${marks} && touch ${mark("ticket-ran")}`, ["agent: terminal"]),
        ".pu/tickets/queue/TASK-0002.md": ticketText("TASK-0002", "echo hi", ['model: "--permission-mode=bypassPermissions"']),
      },
      "a project with its own pu setup",
    );
    clone = path.join(sb.base, "clone");
    sb.git(["clone", "-q", sb.root, clone], sb.base);
    await puJson(["init"]);
  });
  afterAll(async () => {
    const leftovers = await sb.teardown();
    expect(leftovers, "processes left running after `pu daemon stop`").toEqual([]);
  }, 60_000);

  it("before pu trust: the committed ticket waits, the schedule holds its runs, plan start and a spawn with the default trigger are refused", async () => {
    // The ticket the repository carries is seen by the queue, and held as untrusted.
    const queued = await waitFor("the committed ticket to be held as untrusted", async () => {
      const q = await puJson<QueueJson>(["queue"]);
      return q.problems.some((p) => p.file.endsWith("TASK-0001.md") && p.message.includes("untrusted") && p.message.includes("pu trust")) ? q : undefined;
    });
    expect(queued.waiting.map((t) => t.id)).toContain("TASK-0001");
    // A model value that an agent CLI would read as a flag is refused as a bad ticket, trusted or not.
    expect(queued.problems.find((p) => p.file.endsWith("TASK-0002.md"))?.message).toMatch(/model: must not start with "-"/);
    const human = await pu(["queue"]);
    expect(human.stdout + human.stderr).toContain("untrusted: run `pu trust`");

    // A ticket the person writes through pu is trusted as written, but its workflow is the project's.
    await puJson(["ticket", "create", "tidy up", "--type", "CHORE"]);
    await waitFor("the CHORE ticket to be held for its untrusted workflow", async () => {
      const q = await puJson<QueueJson>(["queue"]);
      return q.problems.some((p) => p.message.includes("workflows/CHORE.yaml") && p.message.includes("pu trust")) ? q : undefined;
    });

    // The schedule fell due (every 2 s) and was held, not fired.
    await waitFor("the schedule to hold a run", async () => {
      const list = await puJson<ScheduleList>(["schedule", "list"]);
      return (list.definitions.find((d) => d.name === "often")?.details?.heldRuns ?? 0) > 0;
    });
    // ...and the repository is left as its author committed it: pu wrote no nextRun into the schedule.
    expect(sb.git(["status", "--porcelain"], clone)).toBe("");
    // The list says it will not run before pu trust, and why.
    const listed = (await pu(["schedule", "list"])).stdout;
    expect(listed).toMatch(/^often\s+local\s+yes\s+.*\s+not before `pu trust` \(due \S+\)/m);
    expect(listed).toMatch(/^held: often: not trusted yet: .*pu trust/m);

    const plan = await pu(["plan", "start", "explore the repo"]);
    expect(plan.code).toBe(1);
    expect(plan.stderr).toContain("pu trust");
    expect(plan.stderr).toMatch(/explorer: terminal|plan-explorer\.md/);

    const spawned = await pu(["spawn", "echo hi", "--agent", "terminal", "--root"]);
    expect(spawned.code).toBe(1);
    expect(spawned.stderr).toContain('trigger "nudge" types');

    const shown = await puJson<TrustShow>(["trust", "--show"]);
    const keys = shown.items.filter((i) => !i.trusted).map((i) => i.key);
    for (const key of ["tickets/TASK-0001", "workflows/CHORE.yaml", "schedules/often", "config.yaml plan", "templates/plan-explorer", "triggers/nudge"]) {
      expect(keys.some((k) => k.startsWith(key)), `${key} in ${JSON.stringify(keys)}`).toBe(true);
    }
    expect(shown.items.find((i) => i.key.startsWith("workflows/CHORE"))?.runs).toContain("launch_mode yolo");
    expect((await pu(["trust", "--show"])).stdout).not.toContain("nothing in this project");

    for (const name of ["ticket-ran", "workflow-ran", "schedule-ran", "plan-ran", "inject-ran"]) expect(ran(name), name).toBe(false);
    expect((await sb.status({ cwd: clone })).agents).toEqual({});
  });

  it("after pu trust each route runs; the flag-like model still does not", async () => {
    expect((await pu(["trust"])).code).toBe(0);
    await waitFor("the committed ticket to run", () => ran("ticket-ran"), 60_000);
    await waitFor("the CHORE workflow's step to run", () => ran("workflow-ran"), 60_000);
    await waitFor("the schedule to fire", () => ran("schedule-ran"), 60_000);
    expect((await pu(["schedule", "disable", "often"])).code).toBe(0);
    // Trusted, the schedule keeps its times in its own file again.
    expect(readFileSync(path.join(clone, ".pu/schedules/often.yaml"), "utf8")).toMatch(/^lastRun: /m);

    const spawned = await puJson<{ agentId: string }>(["spawn", "echo hi", "--agent", "terminal", "--root"]);
    await waitFor("the default trigger's inject to run", () => ran("inject-ran"), 60_000);
    expect(spawned.agentId).toMatch(/^ag-/);

    const plan = await puJson<{ sessionId: string }>(["plan", "start", "explore the repo"]);
    await waitFor("the plan's explorer template to be typed", () => ran("plan-ran"), 60_000);
    expect((await pu(["plan", "cancel", plan.sessionId])).code).toBe(0);

    const q = await puJson<QueueJson>(["queue"]);
    expect(q.problems.find((p) => p.file.endsWith("TASK-0002.md"))?.message).toMatch(/model: must not start with "-"/);
  });
});
