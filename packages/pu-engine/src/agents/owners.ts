/**
 * Work the orchestrator owns: the worktrees and agents of a ticket in flight, of a group not
 * finished, of a plan session whose driver runs them. `pu clean` and `pu kill` ask here before
 * touching anything, so a person's sweep never pulls work out from under the queue, a group or
 * a plan; the owner's cancel (or `--force`) lets go of it. Each service answers for its own
 * work from what it knows (state.json's in-flight tickets, the group records, the plan
 * drivers), never from names.
 */
import type { WorktreeEntry } from "@pu/core/manifest";

export interface WorkOwner {
  kind: "ticket" | "group" | "plan";
  /** The ticket, group or plan session id. */
  id: string;
  agentIds: string[];
  worktreeIds: string[];
}

/** A service that owns work: what it holds in one project right now. */
export interface OwnsWork {
  ownedWork(root: string): WorkOwner[];
}

/** The one query: who owns what in a project, asked of every service that can own work. */
export class OwnedWork {
  private readonly byWorktree = new Map<string, WorkOwner>();
  private readonly byAgent = new Map<string, WorkOwner>();

  constructor(owners: readonly WorkOwner[]) {
    for (const owner of owners) {
      for (const id of owner.worktreeIds) if (!this.byWorktree.has(id)) this.byWorktree.set(id, owner);
      for (const id of owner.agentIds) if (!this.byAgent.has(id)) this.byAgent.set(id, owner);
    }
  }

  static of(services: readonly OwnsWork[], root: string): OwnedWork {
    return new OwnedWork(services.flatMap((service) => service.ownedWork(root)));
  }

  agent(agentId: string): WorkOwner | undefined {
    return this.byAgent.get(agentId);
  }

  /** The worktree's owner: named as the owner's worktree, or hosting one of its agents. */
  worktree(wt: Pick<WorktreeEntry, "id" | "agents">): WorkOwner | undefined {
    const direct = this.byWorktree.get(wt.id);
    if (direct) return direct;
    for (const agentId of Object.keys(wt.agents)) {
      const owner = this.byAgent.get(agentId);
      if (owner) return owner;
    }
    return undefined;
  }
}

const CANCEL_COMMAND: Record<WorkOwner["kind"], string> = {
  ticket: "pu ticket cancel",
  group: "pu group cancel",
  plan: "pu plan cancel",
};

/** `owned by ticket TASK-0003; cancel it (pu ticket cancel TASK-0003) or use --force`. */
export function ownedNote(owner: WorkOwner): string {
  return `owned by ${owner.kind} ${owner.id}; cancel it (${CANCEL_COMMAND[owner.kind]} ${owner.id}) or use --force`;
}
