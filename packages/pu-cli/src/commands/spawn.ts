import { Command, Option } from "../clipanion.js";
import type { RequestFields } from "@pu/ipc/protocol";
import { withDaemon } from "../daemon-client.js";
import { positiveNumberOption, wholeNumberOption } from "../number-options.js";
import { PuCommand } from "../pu-command.js";
import { readFileOption } from "../read-file-option.js";
import { CliUsageError } from "../usage-error.js";

function rejectBoth(a: [string, unknown], b: [string, unknown]): void {
  const given = (v: unknown) => v !== undefined && v !== false;
  if (given(a[1]) && given(b[1])) throw new CliUsageError(`${a[0]} and ${b[0]} cannot be used together`);
}

export function parseVars(pairs: readonly string[], option = "--var"): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new CliUsageError(`${option} expects KEY=VALUE, got "${pair}"`);
    vars[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return vars;
}

function parseEnv(pairs: readonly string[]): Record<string, string> {
  const env = parseVars(pairs, "--env");
  for (const key of Object.keys(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new CliUsageError(`--env ${key}=…: "${key}" is not an environment variable name (letters, digits and _, not starting with a digit)`);
  }
  return env;
}

export default class SpawnCommand extends PuCommand {
  static override paths = [["spawn"]];
  static override usage = Command.Usage({
    description: "Start an agent, by default in a new git worktree",
    details: `
      Starts an agent in its own PTY. Without \`--root\` or \`--worktree\` pu creates a new worktree
      (branch \`pu/<name>\`) from \`--base\`, or from the current branch. Arguments after \`--\` go to the agent's command line.

      The agent's environment is the daemon's (the one the first pu command started it with), not
      this shell's: add variables with \`--env KEY=VALUE\` (kept for \`pu play\`). \`--var\` values fill a
      template's and a bound trigger's \`{{VAR}}\` placeholders. \`--file -\` reads the prompt from stdin.
    `,
    examples: [
      ["Ask Claude for a change in a fresh worktree", '$0 spawn "Fix the flaky login test" --agent claude --name fix-login'],
      ["Open a shell in the project root", "$0 spawn --agent terminal --root"],
      ["Add a second agent to an existing worktree", '$0 spawn "Review the diff" --agent codex --worktree wt-ab12cd34'],
      ["Render a template", "$0 spawn --template review --var AREA=auth"],
      ["Bind a trigger with a variable", '$0 spawn "Add the endpoint" --trigger test-and-review --var SUITE=e2e'],
      ["Give the agent an environment variable", '$0 spawn "Run the migration" --env DATABASE_URL=postgres://localhost/dev'],
      ["Run Claude on another machine (pu host add gpu-box …)", '$0 spawn "Fix the flaky test" --agent claude --on gpu-box'],
      ["Run an arbitrary command", '$0 spawn --command "pnpm test --watch" --root'],
      ["Stop its turn once it has spent $2 (or 3 million tokens)", '$0 spawn "Port the parser" --agent codex --max-cost 2 --max-tokens 3000000'],
      ["Pass extra arguments to the agent", '$0 spawn "Plan the refactor" --agent claude -- --model opus'],
    ],
  });

  prompt = Option.String({ required: false, name: "PROMPT" });
  agent = Option.String("--agent", { description: "Agent type (claude, codex, opencode, terminal, or one from .pu/config.yaml)" });
  name = Option.String("--name", { description: "Worktree / agent name" });
  base = Option.String("--base", { description: "Git ref the new worktree starts from" });
  root = Option.Boolean("--root", false, { description: "Run in the project root, without a worktree" });
  worktree = Option.String("--worktree", { description: "Add the agent to this existing worktree" });
  template = Option.String("--template", { description: "Prompt template name" });
  vars = Option.Array("--var", [], { description: "Template / trigger variable KEY=VALUE (repeatable)" });
  env = Option.Array("--env", [], { description: "Environment variable KEY=VALUE for the agent (repeatable)" });
  file = Option.String("--file", { description: "Read the prompt from this file (- for stdin)" });
  command = Option.String("--command", { description: "Run this command instead of an agent type" });
  trigger = Option.String("--trigger", { description: "Bind this trigger to the agent" });
  noTrigger = Option.Boolean("--no-trigger", false, { description: "Do not bind the default trigger" });
  plan = Option.Boolean("--plan", false, { description: "Start the agent in plan mode" });
  on = Option.String("--on", { description: "Run the agent on this host (pu host add), in the project's mirror there" });
  maxTokens = Option.String("--max-tokens", { description: "Budget: interrupt the agent's turn once its tokens (input, cache, output) reach N" });
  maxCost = Option.String("--max-cost", { description: "Budget: interrupt the agent's turn once it has cost this many US dollars" });
  yolo = Option.Boolean("--yolo", false, { description: "Launch mode yolo: the agent type's unattended flags (Claude's skip-permissions, Codex's bypass)" });
  /** Arguments after `--`, set by `main` (see `acceptsPassThrough`). */
  passThrough: string[] = [];
  static acceptsPassThrough = true;

  /** Checks the flags (usage errors come before any project or daemon lookup) and builds the request. */
  buildRequest(): Omit<RequestFields<"spawn">, "projectRoot"> {
    rejectBoth(["--root", this.root], ["--worktree", this.worktree]);
    rejectBoth(["--trigger", this.trigger], ["--no-trigger", this.noTrigger]);
    rejectBoth(["PROMPT", this.prompt], ["--file", this.file]);
    rejectBoth(["--base", this.base], ["--root", this.root]);
    rejectBoth(["--base", this.base], ["--worktree", this.worktree]);
    if (this.vars.length > 0 && this.noTrigger && this.template === undefined) throw new CliUsageError("--var needs --template or a trigger");
    const prompt = this.file !== undefined ? readFileOption(this.file) : this.prompt;
    const fields: Omit<RequestFields<"spawn">, "projectRoot"> = { root: this.root };
    if (prompt !== undefined) fields.prompt = prompt;
    if (this.agent !== undefined) fields.agent = this.agent;
    if (this.name !== undefined) fields.name = this.name;
    if (this.base !== undefined) fields.base = this.base;
    if (this.worktree !== undefined) fields.worktree = this.worktree;
    if (this.command !== undefined) fields.command = this.command;
    if (this.template !== undefined) fields.template = this.template;
    if (this.vars.length > 0) fields.vars = parseVars(this.vars);
    if (this.env.length > 0) fields.env = parseEnv(this.env);
    if (this.plan) fields.planMode = true;
    if (this.yolo) fields.yolo = true;
    if (this.trigger !== undefined) fields.trigger = this.trigger;
    if (this.noTrigger) fields.noTrigger = true;
    if (this.on !== undefined) fields.on = this.on;
    const maxTokens = wholeNumberOption("--max-tokens", this.maxTokens, 1);
    const maxCost = positiveNumberOption("--max-cost", this.maxCost);
    if (maxTokens !== undefined) fields.maxTokens = maxTokens;
    if (maxCost !== undefined) fields.maxCost = maxCost;
    if (this.passThrough.length > 0) fields.extraArgs = this.passThrough;
    if (process.env.PU_AGENT_ID) fields.callerAgentId = process.env.PU_AGENT_ID;
    // Start the PTY at the size of the terminal the user will most likely attach from.
    if (process.stdout.isTTY && process.stdout.columns && process.stdout.rows) {
      fields.cols = process.stdout.columns;
      fields.rows = process.stdout.rows;
    }
    return fields;
  }

  async run(): Promise<number> {
    const fields = { ...this.buildRequest(), projectRoot: this.projectRoot() };
    const result = await withDaemon((client) => client.request("spawn", fields));
    for (const warning of result.warnings) this.report.note(`pu: warning: ${warning}`);
    return this.report.result(result, (out) => {
      const where = result.worktreeId ? `worktree ${result.worktreeId} (branch ${result.branch ?? "?"})` : "the project root";
      out.line(`spawned ${result.agentId} (${result.agent.agentType}) in ${where}${result.host ? ` on host ${result.host}` : ""}`);
      out.line(`  cwd:    ${result.cwd}${result.host ? ` (on ${result.host})` : ""}`);
      out.line(`  attach: pu attach ${result.agentId}`);
    });
  }
}
