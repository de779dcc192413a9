import fs from "node:fs/promises";
import path from "node:path";
import { DEFAULT_CONFIG_YAML } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { configPath, manifestPath } from "@pu/core/paths";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineState } from "../state.js";
import { gitTopLevel } from "../git/runner.js";
import { excludePuDir } from "../git/worktree.js";

/** Makes the git repository containing projectRoot a pu project; idempotent, never clobbers. */
export async function handleInit(state: EngineState, req: RequestOf<"init">): Promise<ResultOf<"init">> {
  const asked = path.resolve(req.projectRoot);
  const root = await gitTopLevel(asked);
  if (!root) throw new PuError("INVALID_ARGUMENT", `${asked} is not a git repository; run \`git init\` first`);

  let created = false;
  if (await state.store.exists(root)) {
    // Validates: a corrupt manifest is reported (MANIFEST_INVALID) and left untouched.
    await state.store.read(root);
  } else {
    created = (await state.store.create(root)).created;
  }
  try {
    await fs.writeFile(configPath(root), DEFAULT_CONFIG_YAML, { flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  await excludePuDir(root);
  await state.rememberProject(root);
  // Schedules written by hand into a project the daemon had not seen yet start counting now.
  state.events.emit("project_added", { projectRoot: root });
  if (created) state.log.event("init", { projectRoot: root });
  return { created, projectRoot: root, manifestPath: manifestPath(root) };
}
