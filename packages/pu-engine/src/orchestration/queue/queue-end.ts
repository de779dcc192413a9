/**
 * The end of a ticket: its completed record, the move to done/, its agent stopped, its slot freed,
 * and a merge of its worktree when the workflow finishes so. The steps (QueueSteps) end here.
 */
import { readFile } from "node:fs/promises";
import type { CompletedTicket } from "@pu/core/operator-state";
import { ticketTrustKey } from "@pu/core/trust";
import { stopAgents, stopFinishedAgents } from "../../agents/stop.js";
import { lastScreenLines } from "../../agents/turn.js";
import { mergeRecordedWorktree } from "../../worktrees/merge-recorded.js";
import { nowIso } from "../../state.js";
import { appendHistory, findTicket, moveTicket } from "./tickets.js";
import { COMPLETED_KEPT, endingSummary, runKey, type TicketEnding, type TicketRun } from "./queue-run.js";
import { QueueDispatch } from "./queue-dispatch.js";

/** A ticket with no output file is summed up by the last lines of its agent's screen. */
const SUMMARY_SCREEN_LINES = 10;

export abstract class QueueEnd extends QueueDispatch {
  protected async complete(run: TicketRun): Promise<void> {
    const ticket = await findTicket(run.root, run.ticketId);
    let summary = "";
    try {
      summary = (await readFile(this.outputFile(run.root, run.ticketId), "utf8")).trim();
    } catch {
      // no output file: the agent's last screen lines
    }
    // Read off the screen model, as `pu logs --screen` shows it: raw bytes keep a shell's
    // backspaces and redraws (`echo X\b\b\b…echo X`), which stripping escapes cannot undo.
    if (!summary && run.live) summary = await lastScreenLines(run.live, SUMMARY_SCREEN_LINES);
    let note: string | undefined;
    if (run.workflow.finish === "merge") note = await this.mergeTicketWorktree(run);
    if (note !== undefined && note.startsWith("merge failed")) return this.fail(run, note);
    await this.finish(run, "done", summary.slice(0, 4000), Array.isArray(ticket.output_tickets) ? (ticket.output_tickets as string[]) : [], note);
  }

  protected async fail(run: TicketRun, message: string): Promise<void> {
    this.state.log.event("ticket_failed", { projectRoot: run.root, ticketId: run.ticketId, message });
    await this.finish(run, "failed", endingSummary("failed", message), [], message);
  }

  /** Moves the ticket to done/, keeps a completed record, frees the slot (the worktree stays). */
  protected async finish(run: TicketRun, outcome: TicketEnding, summary: string, outputTickets: string[], note?: string): Promise<void> {
    // Once per ticket: a cancel racing the ticket's own end (or failure) must not record it twice.
    if (run.finished) return;
    run.finished = true;
    const live = run.live;
    if (live && live.session.exitCode === null) {
      if (outcome === "done") {
        await stopFinishedAgents([live], "queue");
      } else {
        await stopAgents([live], "kill");
      }
    }
    const agentState = this.agentStateOf(run);
    const record: CompletedTicket = {
      ticket_id: run.ticketId,
      ticket_type: agentState?.ticket_type ?? run.ticketId.split("-")[0] ?? "",
      project: run.root,
      summary,
      completed_at: nowIso(),
      pr_url: null,
      output_tickets: outputTickets,
    };
    await this.store.update((s) => {
      s.agents = s.agents.filter((a) => a !== agentState);
      s.completed = [...s.completed, record].slice(-COMPLETED_KEPT);
    });
    // After the record: a crash in between leaves an in-progress ticket with a completed record,
    // which the next start moves on to done/ (see settleUntracked). The history is written before
    // the move, so a ticket seen in done/ already says how it ended.
    await appendHistory(run.root, run.ticketId, { event: outcome, ...(note !== undefined ? { note } : {}) }).catch(() => undefined);
    await moveTicket(run.root, run.ticketId, "in-progress", "done").catch((err: unknown) =>
      this.state.log.event("ticket_move_failed", { projectRoot: run.root, ticketId: run.ticketId, error: err }),
    );
    this.runs.delete(runKey(run.root, run.ticketId));
    await this.forgetTrust(run.root, run.ticketId);
    this.state.log.event("queue_slot_freed", { projectRoot: run.root, ticketId: run.ticketId, outcome, used: this.store.state.agents.length });
    this.state.events.emit("ticket_changed", { projectRoot: run.root, ticketId: run.ticketId, kind: outcome, ...(note !== undefined ? { message: note } : {}) });
    this.kick("slot freed");
  }

  /** A ticket in done/ never runs again: its trust record goes (trust.json stays small). */
  protected async forgetTrust(root: string, ticketId: string): Promise<void> {
    await this.state.trust.forget(root, [ticketTrustKey(ticketId)]).catch((err: unknown) => this.state.log.event("trust_forget_failed", { projectRoot: root, ticketId, error: err }));
  }

  /**
   * The workflow's `finish: merge`, through the path `pu merge` takes (mergeRecordedWorktree): the
   * worktree shows `merging` while git works, so a daemon that dies mid-merge has it settled on
   * restart (the half-done merge in the base's checkout aborted, or recorded merged), and the
   * continued ticket merges again instead of failing on the leftovers.
   */
  protected async mergeTicketWorktree(run: TicketRun): Promise<string> {
    const worktreeId = this.agentStateOf(run)?.session_context_ref;
    if (!worktreeId) return "merge failed: the ticket has no worktree";
    const m = await this.state.store.read(run.root);
    const wt = m.worktrees[worktreeId];
    if (!wt?.baseBranch) return "merge failed: the worktree has no base branch";
    // Merged already: by recovery settling the merge a dead daemon got far enough with, or by hand.
    if (wt.status === "merged") return `merged into ${wt.baseBranch}`;
    try {
      const outcome = await mergeRecordedWorktree(this.state, run.root, { worktreeId, strategy: "merge" });
      return outcome.nothingToMerge ? "nothing to merge" : `merged into ${outcome.baseBranch}`;
    } catch (err) {
      return `merge failed: ${(err as Error).message}`;
    }
  }
}
