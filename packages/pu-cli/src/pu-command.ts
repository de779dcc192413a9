import { Command, Option } from "./clipanion.js";
import { reportError } from "./output.js";
import { resolveProjectRoot } from "@pu/core/paths";

/**
 * What every pu command shares: `--json`, `--project DIR`, and turning any failure into
 * one stderr line plus the right exit code (clipanion would print a stack-ish block to stdout).
 */
export abstract class PuCommand extends Command {
  json = Option.Boolean("--json", false, { description: "Print one JSON document (NDJSON for streams) instead of text" });
  project = Option.String("--project", { description: "Project root (default: $PU_PROJECT_ROOT, else the nearest ancestor with .pu/)" });

  abstract run(): Promise<number>;

  async execute(): Promise<number> {
    try {
      return await this.run();
    } catch (error) {
      return reportError(error, this.json);
    }
  }

  /** The project this command acts on; NOT_INITIALIZED (exit 3) before any daemon is contacted. */
  projectRoot(): string {
    return resolveProjectRoot({ flag: this.project, env: process.env, cwd: process.cwd() });
  }
}
