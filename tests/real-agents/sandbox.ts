import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PU_BIN, PuSandbox } from "../helpers/pu-sandbox.js";

const FIXTURES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "fixtures");

/**
 * A pu sandbox whose every pu process (and so the daemon it starts, and so each agent)
 * also carries a real agent CLI's throw-away home and PATH. The agents get this
 * environment from the daemon, so no `--env` is needed on spawn.
 */
export class RealAgentSandbox extends PuSandbox {
  agentEnv: Record<string, string | undefined> = {};

  override env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
    return super.env({ ...this.agentEnv, ...extra });
  }

  /** `pu logs ID` as the raw bytes the agent wrote to its terminal. */
  rawLogs(agentId: string): Buffer {
    return execFileSync(process.execPath, [PU_BIN, "logs", agentId], { cwd: this.root, env: this.env(), maxBuffer: 64 * 1024 * 1024 });
  }

  /**
   * With PU_SAVE_REAL_FIXTURES=1, writes the agent's raw terminal output to
   * `fixtures/NAME` (screen-model tests read these); otherwise does nothing.
   */
  saveFixture(agentId: string, name: string): void {
    if (process.env.PU_SAVE_REAL_FIXTURES !== "1") return;
    mkdirSync(FIXTURES_DIR, { recursive: true });
    writeFileSync(path.join(FIXTURES_DIR, name), this.rawLogs(agentId));
  }
}
