import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

export default class KillCommand extends PuCommand {
  static override paths = [["kill"]];
  static override usage = Command.Usage({
    description: "Stop agents (SIGTERM, then SIGKILL after a grace period)",
    details:
      "`--all` stops every agent in a worktree; add `--include-root` to stop root agents too. The agent running this command (PU_AGENT_ID) is never killed. Agents a running ticket, group or plan owns are skipped by `--all` and refused when named, until the owner is cancelled (`pu ticket|group|plan cancel ID`) or `--force` is given. `--all` covers the agents pu placed on hosts too; while it cannot read which those are (remote-projects.json), it stops this machine's, says in one line that the hosts' were not, and exits 1.",
    examples: [
      ["Stop one agent", "$0 kill ag-ab12cd34"],
      ["The same, spelled out", "$0 kill --agent ag-ab12cd34"],
      ["Stop every agent of a worktree", "$0 kill --worktree wt-ab12cd34"],
      ["Stop everything", "$0 kill --all --include-root"],
      ["Stop a ticket's agent too (it fails the ticket)", "$0 kill --all --force"],
    ],
  });

  id = Option.String({ name: "ID", required: false });
  agent = Option.String("--agent", { description: "Agent id" });
  worktree = Option.String("--worktree", { description: "Worktree id" });
  all = Option.Boolean("--all", false, { description: "Every worktree agent" });
  includeRoot = Option.Boolean("--include-root", false, { description: "With --all: root agents too" });
  force = Option.Boolean("--force", false, { description: "Also agents a running ticket, group or plan owns" });

  target(): string {
    const chosen = [this.id && "ID", this.agent && "--agent", this.worktree && "--worktree", this.all && "--all"].filter(Boolean);
    if (chosen.length !== 1) {
      throw new CliUsageError(
        chosen.length === 0 ? "say what to kill: an agent or worktree ID, --agent ID, --worktree WT or --all" : `${chosen.join(" and ")} cannot be used together`,
      );
    }
    if (this.includeRoot && !this.all) throw new CliUsageError("--include-root only goes with --all");
    // A bare id may name an agent or a worktree; the daemon tells them apart.
    if (this.id) return this.id;
    if (this.agent) return this.agent;
    if (this.worktree) return this.worktree;
    return this.includeRoot ? "all" : "worktrees";
  }

  async run(): Promise<number> {
    const target = this.target();
    const projectRoot = this.projectRoot();
    const fields = {
      projectRoot,
      target,
      ...(process.env.PU_AGENT_ID ? { callerAgentId: process.env.PU_AGENT_ID } : {}),
      ...(this.force ? { force: true } : {}),
    };
    const result = await withDaemon((client) => client.request("kill", fields));
    const problems = result.problems ?? [];
    const here = problems.length > 0 ? " on this machine" : "";
    return this.report.result(
      result,
      (out) => {
        for (const k of result.killed) out.line(`killed ${k.agentId} (exit ${k.exitCode ?? "unknown"})`);
        for (const s of result.skipped) out.line(`skipped ${s.agentId}: ${s.reason}`);
        const left = result.rootAgentsLeft ?? 0;
        if (result.killed.length === 0 && result.skipped.length === 0) out.line(left > 0 ? `no worktree agent to kill${here}` : `nothing to kill${here}`);
        if (left > 0) out.line(`${left} root agent${left === 1 ? " is" : "s are"} still running: --all stops worktree agents only; add --include-root to stop ${left === 1 ? "it" : "them"} too`);
        // The JSON document carries them as `problems`.
        for (const problem of problems) this.report.note(`pu: ${problem}`);
      },
      // Not everything asked for was stopped, and pu cannot say what is left: a failure.
      problems.length > 0 ? 1 : 0,
    );
  }
}
