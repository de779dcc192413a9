import { Command, Option } from "../clipanion.js";
import { commandSpecs, complete, type Candidate, type IdKind } from "../completion-candidates.js";
import { completionScript, formatCompletion, SHELLS, type Shell } from "../completion-script.js";
import { CliUsageError } from "../usage-error.js";
import { tryConnectDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";
import { resolveProjectRoot } from "@pu/core/paths";
import type { AgentView, StatusReport } from "@pu/ipc/protocol";

export default class CompletionCommand extends PuCommand {
  static override paths = [["completion"]];
  static override usage = Command.Usage({
    description: "Print the shell completion script for bash or zsh",
    details: `
      Completes command names, subcommands (\`trigger list\`), each command's options, and agent and
      worktree ids from the running daemon (a completion never starts one). Load it in your
      shell's startup file; see docs/install.md.
    `,
    examples: [
      ["Complete in this bash session", "source <($0 completion bash)"],
      ["Install for zsh (a directory on $fpath)", "$0 completion zsh > ~/.zfunc/_pu"],
    ],
  });

  shell = Option.String({ name: "SHELL", required: false });
  // What the scripts call on every Tab: the words after `pu`, up to the one being completed.
  candidates = Option.Boolean("--candidates", false, { hidden: true });
  /** The words after `--`, set by `main` (see `acceptsPassThrough`). */
  passThrough: string[] = [];
  static acceptsPassThrough = true;

  async run(): Promise<number> {
    if (this.candidates) return this.printCandidates();
    if (this.shell === undefined || !SHELLS.includes(this.shell as Shell)) {
      throw new CliUsageError(`pu completion needs a shell: ${SHELLS.join(" or ")}, e.g. \`pu completion bash\``);
    }
    const shell = this.shell as Shell;
    const script = completionScript(shell);
    return this.report.result({ shell, script }, (out) => out.write(script));
  }

  private async printCandidates(): Promise<number> {
    // main registers every command alongside this one (SEES_EVERY_COMMAND in cli.ts).
    const words = this.passThrough.length > 0 ? this.passThrough : [""];
    const completion = await complete(commandSpecs(this.cli.definitions()), words, daemonIds);
    process.stdout.write(formatCompletion(completion));
    return 0;
  }
}

/** Agent or worktree ids of the project, from a daemon that already runs; none otherwise. */
async function daemonIds(kind: IdKind, projectFlag: string | undefined): Promise<Candidate[]> {
  let projectRoot: string;
  try {
    projectRoot = resolveProjectRoot({ flag: projectFlag, env: process.env, cwd: process.cwd() });
  } catch {
    return [];
  }
  const client = await tryConnectDaemon().catch(() => undefined);
  if (client === undefined) return [];
  try {
    const report: StatusReport = await client.request("status", { projectRoot });
    if (kind === "worktrees") {
      return Object.values(report.worktrees).map((wt) => ({ value: wt.id, description: `${wt.name} · ${wt.status}` }));
    }
    const describe = (agent: AgentView): Candidate => ({ value: agent.id, description: `${agent.name} · ${agent.agentType} · ${agent.status}` });
    return [...Object.values(report.agents), ...Object.values(report.worktrees).flatMap((wt) => Object.values(wt.agents))].map(describe);
  } catch {
    return [];
  } finally {
    client.close();
  }
}
