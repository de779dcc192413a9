import { Command, Option } from "./clipanion.js";
import { Report } from "./report.js";
import { resolveProjectRoot } from "@pu/core/paths";

/**
 * What every pu command shares: `--json`, `--project DIR`, a report that owns the command's
 * output, and turning any failure into one stderr line plus the right exit code (clipanion
 * would print a stack-ish block to stdout).
 */
export abstract class PuCommand extends Command {
  json = Option.Boolean("--json", false, { description: "Print one JSON document (NDJSON for streams) instead of text" });
  project = Option.String("--project", { description: "Project root (default: $PU_PROJECT_ROOT, else the nearest ancestor with .pu/)" });

  /** Made by execute() from `--json`; commands write their answers, notes and streams through it. */
  protected report!: Report;

  abstract run(): Promise<number>;

  async execute(): Promise<number> {
    this.report = new Report(this.json);
    try {
      return await this.run();
    } catch (error) {
      return this.report.error(error);
    }
  }

  /** The project this command acts on; NOT_INITIALIZED (exit 3) before any daemon is contacted. */
  projectRoot(): string {
    return resolveProjectRoot({ flag: this.project, env: process.env, cwd: process.cwd() });
  }
}
