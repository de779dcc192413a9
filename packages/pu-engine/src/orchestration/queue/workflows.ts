/**
 * Which workflow a ticket type runs. A collection names a set of workflows; a project uses
 * the one in `project_collection_prefs` (default: "default"). Lookup, first found wins:
 * `.pu/workflows/<TYPE>.yaml`, `.pu/workflows/<collection>/<TYPE>.yaml`,
 * `$PU_HOME/workflows/<TYPE>.yaml`, `$PU_HOME/workflows/<collection>/<TYPE>.yaml`, and for
 * the default collection the workflow pu ships.
 */
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { DEFAULT_COLLECTION, DEFAULT_WORKFLOWS } from "@pu/core/default-workflows";
import { PuError } from "@pu/core/errors";
import { puDir } from "@pu/core/paths";
import { workflowTrustItem } from "@pu/core/trust";
import { parseWorkflow, type Workflow } from "@pu/core/workflow";
import type { EngineState } from "../../state.js";

export interface ResolvedWorkflow {
  workflow: Workflow;
  /** The file it came from; `built-in:<collection>/<TYPE>` for a shipped one. */
  source: string;
}

async function readIfThere(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** The workflow for `type`; CONFIG_ERROR naming the file and field when it is invalid, NOT_FOUND when none exists. */
export async function resolveWorkflow(state: EngineState, root: string, type: string, collection: string): Promise<ResolvedWorkflow> {
  const local = path.join(puDir(root), "workflows");
  const global = path.join(state.home, "workflows");
  const candidates = [
    { file: path.join(local, `${type}.yaml`), local: true },
    { file: path.join(local, collection, `${type}.yaml`), local: true },
    { file: path.join(global, `${type}.yaml`), local: false },
    { file: path.join(global, collection, `${type}.yaml`), local: false },
  ];
  for (const candidate of candidates) {
    const text = await readIfThere(candidate.file);
    if (text === undefined) continue;
    const { workflow, warnings } = parseWorkflow(text, candidate.file);
    for (const warning of warnings) state.log.event("workflow_warning", { projectRoot: root, warning });
    // Gates in a project's own workflow run commands: only after `pu trust`.
    if (candidate.local) await state.trust.require(root, [workflowTrustItem(root, candidate.file, workflow)]);
    return { workflow, source: candidate.file };
  }
  const shipped = collection === DEFAULT_COLLECTION ? DEFAULT_WORKFLOWS[type] : undefined;
  if (shipped !== undefined) return { workflow: parseWorkflow(shipped, `built-in:${collection}/${type}`).workflow, source: `built-in:${collection}/${type}` };
  throw new PuError("NOT_FOUND", `no workflow for ticket type ${type} in collection "${collection}" (write .pu/workflows/${type}.yaml)`);
}

/**
 * Whether a collection exists for the project: the default one always does (pu ships it); any
 * other is a folder of workflows in the project's `.pu/workflows/` or in `$PU_HOME/workflows/`.
 */
export async function collectionExists(state: EngineState, root: string, collection: string): Promise<boolean> {
  if (collection === DEFAULT_COLLECTION) return true;
  for (const dir of [path.join(puDir(root), "workflows", collection), path.join(state.home, "workflows", collection)]) {
    const found = await stat(dir).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (found) return true;
  }
  return false;
}
