// `pu gate pre-commit|pre-push`, run by the git hooks pu installs in its worktrees
// (see pu-engine's git-hooks.ts): the daemon runs every matching trigger's gates in
// the repository being committed; the exit code is the hook's answer.
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import { PuError } from "@pu/core/errors";
import { manifestPath } from "@pu/core/paths";
import type { GateResult } from "@pu/ipc/protocol";
import { Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { PuCommand } from "../../pu-command.js";
import { resolveProjectRoot } from "@pu/core/paths";
import { stripControlCharacters } from "@pu/core/prompt-text";

export type GateEvent = "pre_commit" | "pre_push";

/**
 * The project a gate belongs to: `--project` / `$PU_PROJECT_ROOT` (the hooks set it),
 * else the directory holding the nearest `.pu/worktrees/` above `dir`, else the usual
 * lookup. Checking the worktrees directory first keeps a worktree whose checkout
 * carries a `.pu/` of its own from being taken for the project.
 */
function gateProjectRoot(dir: string, flag: string | undefined, env: NodeJS.ProcessEnv): string {
  if (flag !== undefined || env.PU_PROJECT_ROOT) return resolveProjectRoot({ flag, env, cwd: dir });
  const marker = `${path.sep}.pu${path.sep}worktrees${path.sep}`;
  const at = `${dir}${path.sep}`.lastIndexOf(marker);
  if (at >= 0) {
    const root = dir.slice(0, at) || path.sep;
    if (existsSync(manifestPath(root))) return root;
  }
  return resolveProjectRoot({ env: {}, cwd: dir });
}

function failingRuns(result: GateResult): GateResult["runs"] {
  return result.runs.filter((run) => !run.passed);
}

export abstract class GateCommand extends PuCommand {
  abstract readonly event: GateEvent;
  cwd = Option.String("--cwd", { description: "Repository directory the gates run in (default: the current directory)" });

  async run(): Promise<number> {
    const given = path.resolve(this.cwd ?? process.cwd());
    let dir: string;
    try {
      dir = realpathSync(given);
    } catch {
      throw new PuError("INVALID_ARGUMENT", `--cwd ${given} does not exist`);
    }
    const projectRoot = gateProjectRoot(dir, this.project, process.env);
    // Gates have their own timeouts (600s each by default); the request waits for all of them.
    const result = await withDaemon((client) => client.request("gate", { projectRoot, event: this.event, cwd: dir }));
    // A hook's answer is its exit code; a person reads why on stderr (below), not on stdout.
    this.report.result(result, () => {});
    if (result.passed) return 0;
    const hook = this.event.replace("_", "-");
    const failing = failingRuns(result);
    for (const run of failing) {
      const outcome = run.timedOut ? "timed out" : run.exitCode === null ? "was killed" : `exited ${run.exitCode} (expected ${run.expectedExit})`;
      this.report.note(`pu: ${hook} gate \`${run.command}\` (trigger ${run.triggerName}) ${outcome} after ${(run.durationMs / 1000).toFixed(1)}s`);
      const tail = run.outputTail.replace(/\s+$/, "");
      // Command output: colours and cursor moves dropped, not shown as escapes.
      if (tail !== "") this.report.note(stripControlCharacters(tail));
    }
    const action = this.event === "pre_commit" ? "commit" : "push";
    this.report.note(`pu: ${action} blocked by ${failing.length} failing ${hook} ${failing.length === 1 ? "gate" : "gates"}`);
    return 1;
  }
}
