import { Command, Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { checkedName, NOUNS, parseVarPairs, withLookedIn } from "../../definition-commands.js";
import { PuCommand } from "../../pu-command.js";
import type { HumanOutput } from "../../report.js";

export default class SwarmRunCommand extends PuCommand {
  static override paths = [["swarm", "run"]];
  static override usage = Command.Usage({
    description: "Start a swarm: its worktrees, each with the swarm's agents",
    details: `
      Prints a line per agent started and per agent that could not be started. A failure does not stop the rest,
      and what did start keeps running; the exit code is 1 when anything failed.
    `,
    examples: [
      ["Start a swarm", "$0 swarm run review-team"],
      ["With template variables", "$0 swarm run review-team --var AREA=auth"],
    ],
  });

  name = Option.String({ name: "NAME" });
  vars = Option.Array("--var", [], { description: "Template variable KEY=VALUE for the swarm's agents (repeatable)" });

  async run(): Promise<number> {
    const name = checkedName(NOUNS.swarm, this.name);
    const vars = parseVarPairs(this.vars);
    const projectRoot = this.projectRoot();
    const fields = vars === undefined ? { projectRoot, name } : { projectRoot, name, vars };
    // Every agent is a spawn (worktree creation included): give a big swarm time.
    let result;
    try {
      result = await withDaemon((client) => client.request("run_swarm", fields));
    } catch (error) {
      throw withLookedIn(NOUNS.swarm, name, error);
    }
    const failed = result.failed.length > 0;
    const human = (out: HumanOutput) => {
      for (const s of result.spawned) out.line(`spawned ${s.agentId} (${s.role}) in ${s.worktreeId ?? "the project root"}`);
      // The JSON document lists the failures itself; a person reads them on stderr.
      for (const f of result.failed) this.report.note(`pu: failed to start ${f.role}${f.agentDef ? ` (agent definition ${f.agentDef})` : ""}: ${f.message}`);
      const worktrees = new Set(result.spawned.map((s) => s.worktreeId).filter((w) => w !== undefined));
      const summary = `swarm ${name}: ${result.spawned.length} spawned in ${worktrees.size} ${worktrees.size === 1 ? "worktree" : "worktrees"}`;
      if (!failed) {
        out.line(summary);
        return;
      }
      const roles = result.failed.map((f) => f.role).join(", ");
      this.report.note(`pu: ${summary}, ${result.failed.length} failed (${roles}); what started keeps running (see \`pu status\`)`);
    };
    return this.report.result(result, human, failed ? 1 : 0);
  }
}
