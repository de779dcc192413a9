/**
 * The daemon itself and the projects it serves: `pu init` (a git repository made a pu
 * project), health, and the shutdown a client asks for.
 */
import fs from "node:fs/promises";
import { DEFAULT_CONFIG_YAML } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { configPath, manifestPath } from "@pu/core/paths";
import { DAEMON_VERSION, PROTOCOL_VERSION, type HealthResult, type ResultOf } from "@pu/ipc/protocol";
import { gitTopLevel } from "./git/runner.js";
import { excludePuDir } from "./git/worktree.js";
import type { EngineState } from "./state.js";

export class DaemonService {
  constructor(private readonly state: EngineState) {}

  /** Makes the git repository containing `asked` a pu project; idempotent, never clobbers. */
  async init(asked: string): Promise<ResultOf<"init">> {
    const root = await gitTopLevel(asked);
    if (!root) throw new PuError("INVALID_ARGUMENT", `${asked} is not a git repository; run \`git init\` first`);
    let created = false;
    if (await this.state.store.exists(root)) {
      // Validates: a corrupt manifest is reported (MANIFEST_INVALID) and left untouched.
      await this.state.store.read(root);
    } else {
      created = (await this.state.store.create(root)).created;
    }
    try {
      await fs.writeFile(configPath(root), DEFAULT_CONFIG_YAML, { flag: "wx" });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    await excludePuDir(root);
    await this.state.rememberProject(root);
    // Schedules written by hand into a project the daemon had not seen yet start counting now.
    this.state.events.emit("project_added", { projectRoot: root });
    if (created) this.state.log.event("init", { projectRoot: root });
    return { created, projectRoot: root, manifestPath: manifestPath(root) };
  }

  health(): HealthResult {
    const held = [...this.state.sessions.values()];
    return {
      pid: process.pid,
      uptimeSeconds: Math.floor((Date.now() - this.state.startedAt) / 1000),
      protocolVersion: PROTOCOL_VERSION,
      daemonVersion: DAEMON_VERSION,
      home: this.state.home,
      agentCount: held.length,
      liveAgentCount: held.filter((a) => a.session.exitCode === null).length,
      projects: this.state.projects.list(),
      ...(this.state.projects.problem !== undefined ? { problems: [this.state.projects.problem] } : {}),
    };
  }

  /** The daemon stops accepting, suspends every agent and exits, once the current reply is sent. */
  shutdown(): void {
    this.state.requestShutdown();
  }
}
