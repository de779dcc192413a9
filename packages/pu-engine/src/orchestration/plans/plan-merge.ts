/**
 * `pu plan merge ID`: a COMPLETE session's integration branch (`pu/plan-<id>`) merged into the
 * branch the session started from, through the one merge `pu merge` uses (the same strategies,
 * the same refusals: uncommitted work, a base that does not fast-forward, a conflict aborted
 * cleanly with both branches left as they were), and recorded in the session's evidence log.
 */
import { loadConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import type { EvidenceLogEntry } from "@pu/core/plan-files";
import { planBranch } from "@pu/core/plan-layout";
import { worktreesDir } from "@pu/core/paths";
import type { PlanMergeResult } from "@pu/ipc/protocol";
import { mergeWorktree } from "../../git/merge.js";
import { currentBranch } from "../../git/runner.js";
import type { EngineState } from "../../state.js";
import { layoutOf, readPlan, updatePlan } from "./plan-store.js";

/** The `session_started` evidence entry's field naming the branch the project was on (pu's own, beside the seed's). */
export const PLAN_BASE_BRANCH_FIELD = "base_branch";

export interface PlanMergeOptions {
  strategy: "merge" | "squash" | "ff-only";
  message?: string;
  /** Merge into this branch instead of the one the session started from. */
  into?: string;
}

function entry(type: string, status: string, summary: string): EvidenceLogEntry {
  return { timestamp: new Date().toISOString(), type, status, summary };
}

export async function mergePlan(state: EngineState, root: string, sessionId: string, options: PlanMergeOptions): Promise<PlanMergeResult> {
  const layout = layoutOf(root, sessionId);
  const { session } = await readPlan(layout);
  const branch = planBranch(sessionId);
  if (session.phase !== "COMPLETE") {
    throw new PuError(
      "INVALID_STATE",
      `plan ${sessionId} is ${session.phase}, not COMPLETE; only a verified plan is merged by pu (its work so far is on ${branch}: \`git merge ${branch}\` takes it by hand)`,
    );
  }
  const recorded = session.evidence_log.find((e) => e.type === "session_started")?.[PLAN_BASE_BRANCH_FIELD];
  const baseBranch = options.into ?? (typeof recorded === "string" && recorded !== "" ? recorded : await currentBranch(root));
  if (!baseBranch) throw new PuError("INVALID_ARGUMENT", `plan ${sessionId} has no recorded base branch and ${root} is on a detached HEAD; pass --into BRANCH`);
  const goal = session.goal.split("\n")[0]?.slice(0, 72) ?? "";
  try {
    const outcome = await mergeWorktree({
      projectRoot: root,
      branch,
      baseBranch,
      strategy: options.strategy,
      message: options.message ?? `${options.strategy === "squash" ? "Plan" : "Merge plan"} ${sessionId}: ${goal}`,
      worktreesDir: worktreesDir(root),
      ignoreUntracked: (await loadConfig(root)).envFiles,
    });
    const summary = outcome.alreadyUpToDate ? `nothing to merge: ${baseBranch} already holds ${branch}` : `merged ${branch} into ${baseBranch} (${options.strategy}) at ${outcome.commit.slice(0, 12)}`;
    await updatePlan(layout, (files) => {
      files.session.evidence_log.push(entry("merged", "passed", summary));
    });
    state.log.event(outcome.alreadyUpToDate ? "plan_merge_nothing" : "plan_merged", { projectRoot: root, sessionId, baseBranch, commit: outcome.commit });
    return {
      sessionId,
      branch,
      baseBranch,
      strategy: options.strategy,
      commit: outcome.commit,
      ...(outcome.alreadyUpToDate ? { nothingToMerge: true } : {}),
    };
  } catch (err) {
    await updatePlan(layout, (files) => {
      files.session.evidence_log.push(entry("merge_failed", "failed", `merge of ${branch} into ${baseBranch}: ${(err as Error).message}`.slice(0, 2000)));
    }).catch((writeErr: unknown) => state.log.event("plan_merge_record_failed", { projectRoot: root, sessionId, error: writeErr }));
    state.log.event("plan_merge_failed", { projectRoot: root, sessionId, error: err });
    throw err;
  }
}
