/**
 * The worktree a ticket's dispatch began before the daemon died (SIGKILL between the dispatch
 * and its agent's start): the ticket went back to the queue (QueueService.continueTicket), and its
 * next dispatch works in that worktree instead of leaving it behind, owned by nobody, beside a new one.
 */
import { loadConfig } from "@pu/core/config";
import type { WorktreeEntry } from "@pu/core/manifest";
import { uncommittedWork } from "../../git/worktree.js";
import { revParse } from "../../git/runner.js";
import type { EngineState } from "../../state.js";

/** The history event of a ticket a restart sent back to queue/ (settleUntracked, continueTicket). */
export const REQUEUED_AFTER_RESTART = "requeued after a daemon restart";

/**
 * The id of the worktree made for `ticketId` that it can start in again, if there is one. It is
 * the ticket's when named as dispatch names it (the ticket id, lower case; `-2`… when taken, as
 * createWorktree does) with no agent but the ticket's (recovery adopts a worktree made without an
 * entry with none; one entered has the ticket's half-started agent, PU_TICKET_ID in its env). It
 * is taken only when nothing in it is anyone's work: no running agent, no file uncommitted, and
 * its branch exactly at its base (which also makes it what a new worktree would be). Anything
 * else is left as it is, and the ticket gets a new worktree as usual.
 */
export async function leftoverWorktree(state: EngineState, root: string, ticketId: string, owned: ReadonlySet<string>): Promise<string | undefined> {
  const base = ticketId.toLowerCase();
  const m = await state.store.read(root);
  const candidates = Object.values(m.worktrees).filter(
    (wt) =>
      wt.status === "active" &&
      !owned.has(wt.id) &&
      (wt.name === base || (wt.name.startsWith(`${base}-`) && /^\d+$/.test(wt.name.slice(base.length + 1)))) &&
      wt.branch === `pu/${wt.name}` &&
      Object.values(wt.agents).every((a) => a.env?.PU_TICKET_ID === ticketId && !state.isRunning(a.id)),
  );
  if (candidates.length === 0) return undefined;
  const envFiles = (await loadConfig(root)).envFiles;
  for (const wt of candidates) {
    if (await untouched(root, wt, envFiles)) return wt.id;
  }
  return undefined;
}

async function untouched(root: string, wt: WorktreeEntry, envFiles: string[]): Promise<boolean> {
  if (!wt.baseBranch) return false;
  try {
    const [head, baseHead] = await Promise.all([revParse(root, wt.branch), revParse(root, wt.baseBranch)]);
    if (head === null || head !== baseHead) return false;
    return (await uncommittedWork(wt.path, envFiles)).length === 0;
  } catch {
    // Unreadable (its directory gone, say): not a worktree to start in.
    return false;
  }
}
