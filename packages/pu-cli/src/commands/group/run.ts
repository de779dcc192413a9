import { setTimeout as sleep } from "node:timers/promises";
import type { GroupView } from "@pu/ipc/protocol";
import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writeGroupCompare, writeGroupSummary } from "../../group-view.js";
import { optional, positiveNumberOption, wholeNumberOption } from "../../number-options.js";
import { PuCommand } from "../../pu-command.js";
import { readFileOption } from "../../read-file-option.js";
import { CliUsageError } from "../../usage-error.js";

const AGGREGATES = ["collect", "gate", "judge"] as const;
const JOINS = ["all", "first"] as const;
const FINISHED = ["complete", "failed", "cancelled"];
const WAIT_POLL_MS = 300;

function oneOf<T extends string>(flag: string, raw: string | undefined, allowed: readonly T[]): T | undefined {
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) throw new CliUsageError(`${flag} expects ${allowed.join(", ")}; got "${raw}"`);
  return raw as T;
}

export default class GroupRunCommand extends PuCommand {
  static override paths = [["group", "run"]];
  static override usage = Command.Usage({
    description: "Give one task to several agents, models or prompts at once, each in its own worktree",
    details: [
      "Several agents and one prompt make a multi_model group (variant keys: the agent, or TYPE:MODEL); one agent and several `--prompt-file`s a multi_prompt group (keys 0, 1, …); `--matrix` runs every agent with every prompt (keys TYPE:INDEX). PROMPT, when given with prompt files, comes first in every member's prompt.",
      "Members wait for slots under the queue's caps (`queue.maxParallel`) and while it is paused. A member is done when it waits after its turn and the gate (if any) passes; it fails when it exits, fails the gate past `--retries`, or passes `--timeout`. The group completes when at least `--quorum` members are done.",
      "`--on local,HOST…` spreads the members over this machine (`local`) and hosts (`pu host list`): each goes to the place with room that holds the fewest of the group's members so far — this machine under its caps, a host under its `--max-agents`. A member on a host runs there as its daemon runs any member (gate, retries, time limit); `pu group diff` and `pu group pick` reach it there (its branch fetched back to merge). See docs/hosts.md.",
      "`--aggregate gate` picks the passing member with the smallest change; `--aggregate judge` has an agent of type `--judge` rank the members. Then `pu group compare`, `pu group diff`, `pu group pick`. See docs/groups.md.",
    ].join("\n\n"),
    examples: [
      ["Three agents, one task", '$0 group run "fix the flaky login test" --agents claude,codex,opencode'],
      ["Pick a model for one of them", '$0 group run "add a --dry-run flag" --agents claude,codex --model codex=gpt-5'],
      ["One agent, two approaches", "$0 group run --agent claude --prompt-file a.md --prompt-file b.md"],
      ["Every agent with every prompt", "$0 group run --agents claude,codex --prompt-file a.md --prompt-file b.md --matrix"],
      ["Keep the smallest change that passes the tests", '$0 group run "make the test pass" --agents claude,codex --gate "npm test" --aggregate gate --wait'],
      ["At most $5 for the whole group", '$0 group run "port the parser" --agents claude,codex --max-cost 5'],
      ["Spread the members over this machine and a host", '$0 group run "speed up the build" --agents claude,codex,opencode --on local,gpu-box'],
    ],
  });

  prompt = Option.String({ name: "PROMPT", required: false });
  agents = Option.String("--agents", { description: "Agent types (TYPE or TYPE:MODEL), comma-separated" });
  agent = Option.String("--agent", { description: "One agent type, for several prompts" });
  models = Option.Array("--model", [], { description: "TYPE=MODEL: the model one of the agents runs (repeatable)" });
  promptFiles = Option.Array("--prompt-file", [], { description: "A prompt variant from a file (repeatable; - is stdin)" });
  matrix = Option.Boolean("--matrix", false, { description: "Every agent × every prompt" });
  aggregate = Option.String("--aggregate", { description: "collect (default), gate or judge" });
  join = Option.String("--join", { description: "all (default): wait for every member; first: end at the first one done" });
  quorum = Option.String("--quorum", { description: "Members that must be done for the group to complete (default 1)" });
  gate = Option.String("--gate", { description: "A check run in each member's worktree when it is done (your own command)" });
  gateTimeout = Option.String("--gate-timeout", { description: "Seconds the gate may run (default 600)" });
  retries = Option.String("--retries", { description: "Fix turns a member gets when the gate fails (default 0)" });
  timeout = Option.String("--timeout", { description: "Minutes a member may work before it is stopped and failed" });
  judge = Option.String("--judge", { description: "The judge's agent type (with --aggregate judge; default: the project's default agent)" });
  base = Option.String("--base", { description: "The branch every member starts from (default: the current branch)" });
  maxCost = Option.String("--max-cost", { description: "The group's budget in US dollars: spent, no further member starts and running members are interrupted" });
  maxTokens = Option.String("--max-tokens", { description: "The group's budget in tokens (input, cache, output), as --max-cost" });
  on = Option.String("--on", { description: "Where members run: local (this machine) and hosts, comma-separated; spread over those with room" });
  wait = Option.Boolean("--wait", false, { description: "Wait for the group to end and print the comparison; exit 1 unless it completes" });

  private kindAndPrompts(): { kind: "multi_model" | "multi_prompt" | "matrixed"; agents: string[]; prompt: string; prompts: string[] } {
    if (this.agents !== undefined && this.agent !== undefined) throw new CliUsageError("give --agents a,b or --agent X, not both");
    const agents = (this.agents ?? this.agent ?? "").split(",").map((a) => a.trim()).filter((a) => a !== "");
    if (agents.length === 0) throw new CliUsageError("name the agents: --agents claude,codex (or --agent claude with --prompt-file)");
    const files = this.promptFiles.map((f) => readFileOption(f, "--prompt-file"));
    const prompt = this.prompt ?? "";
    if (this.matrix) {
      if (files.length === 0) throw new CliUsageError("--matrix needs at least one --prompt-file");
      return { kind: "matrixed", agents, prompt, prompts: files };
    }
    if (agents.length === 1) {
      if (files.length < 2) throw new CliUsageError("one agent needs at least two --prompt-file variants (or name several --agents)");
      return { kind: "multi_prompt", agents, prompt, prompts: files };
    }
    if (files.length > 1) throw new CliUsageError("several agents and several prompts: add --matrix to run every agent with every prompt");
    const only = [prompt, files[0] ?? ""].filter((p) => p.trim() !== "").join("\n\n");
    if (only.trim() === "") throw new CliUsageError("give the task: pu group run PROMPT --agents a,b (or --prompt-file FILE)");
    return { kind: "multi_model", agents, prompt: only, prompts: [] };
  }

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const { kind, agents, prompt, prompts } = this.kindAndPrompts();
    const aggregate = oneOf("--aggregate", this.aggregate, AGGREGATES);
    const join = oneOf("--join", this.join, JOINS);
    if (aggregate === "gate" && this.gate === undefined) throw new CliUsageError("--aggregate gate needs --gate CMD");
    if (this.judge !== undefined && aggregate !== "judge") throw new CliUsageError("--judge goes with --aggregate judge");
    const models = this.models.flatMap((m) => m.split(",")).filter((m) => m !== "");
    const fields = {
      projectRoot,
      kind,
      agents: models.length > 0 ? applyModelFlags(agents, models) : agents,
      prompt,
      prompts,
      ...(aggregate !== undefined ? { aggregate } : {}),
      ...(join !== undefined ? { join } : {}),
      ...optional("quorum", wholeNumberOption("--quorum", this.quorum, 1)),
      ...(this.gate !== undefined ? { gate: this.gate } : {}),
      ...optional("gateTimeoutSeconds", positiveNumberOption("--gate-timeout", this.gateTimeout)),
      ...optional("maxRetries", wholeNumberOption("--retries", this.retries, 0)),
      ...optional("timeoutMinutes", positiveNumberOption("--timeout", this.timeout)),
      ...(this.judge !== undefined ? { judge: this.judge } : {}),
      ...(this.base !== undefined ? { base: this.base } : {}),
      ...optional("maxCost", positiveNumberOption("--max-cost", this.maxCost)),
      ...optional("maxTokens", wholeNumberOption("--max-tokens", this.maxTokens, 1)),
      ...(this.on !== undefined ? { on: this.on.split(",").map((p) => p.trim()) } : {}),
    };
    let group: GroupView = await withDaemon((client) => client.request("group_run", fields));
    if (!this.wait) return this.report.result(group, (out) => writeGroupSummary(out, group));
    this.report.note(`pu: group ${group.groupId} started with ${group.members.length} members; waiting for it to end`);
    while (!FINISHED.includes(group.phase)) {
      await sleep(WAIT_POLL_MS);
      const id = group.groupId;
      group = await withDaemon((client) => client.request("group_status", { projectRoot, groupId: id }));
    }
    const finished = group;
    return this.report.result(finished, (out) => writeGroupCompare(out, finished), finished.phase === "complete" ? 0 : 1);
  }
}


/** `--model codex=gpt-5` makes the delegator `codex:gpt-5`; a model for an agent not in the group is a usage error. */
function applyModelFlags(agents: string[], models: string[]): string[] {
  const byType = new Map<string, string>();
  for (const entry of models) {
    const eq = entry.indexOf("=");
    if (eq <= 0 || eq === entry.length - 1) throw new CliUsageError(`--model expects TYPE=MODEL, got "${entry}"`);
    byType.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  const types = agents.map((a) => a.split(":")[0] ?? a);
  for (const type of byType.keys()) if (!types.includes(type)) throw new CliUsageError(`--model ${type}=…: ${type} is not one of --agents (${types.join(", ")})`);
  return agents.map((a) => {
    const [type = a, model] = a.split(":");
    const given = byType.get(type);
    return given !== undefined && model === undefined ? `${type}:${given}` : a;
  });
}
