// pu's own commits of what an agent left uncommitted (a plan task, a group member).
import { gitOrFail, uncommittedFiles } from "./runner.js";

/**
 * Commits everything in the worktree (untracked files too), as pu and without hooks; env files
 * pu copied in stay out. Returns false when there was nothing to commit.
 */
export async function commitAllChanges(cwd: string, message: string, keepOut: readonly string[] = []): Promise<boolean> {
  if ((await uncommittedFiles(cwd, { includeUntracked: true })).length === 0) return false;
  await gitOrFail(cwd, ["add", "-A"], "stage the agent's changes");
  if (keepOut.length > 0) await gitOrFail(cwd, ["reset", "-q", "--", ...keepOut.map((f) => `:(literal)${f}`)], "leave the env files out of the commit");
  if ((await uncommittedFiles(cwd, { includeUntracked: false })).length === 0) return false;
  await gitOrFail(cwd, ["-c", "user.name=pu", "-c", "user.email=pu@localhost", "commit", "-q", "--no-verify", "-m", message], "commit the agent's changes");
  return true;
}
