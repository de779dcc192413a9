// The words a person reads for an agent's status, the same in `pu status` and in `pu web`'s
// page. Pure and free of Node built-ins: the page's bundle imports it too.
import type { AgentStatus } from "./manifest.js";
import type { WaitingReason } from "./status.js";

export interface StatusLabelInputs {
  status: AgentStatus;
  suspended?: boolean | null | undefined;
  exitCode?: number | null | undefined;
  waitingReason?: WaitingReason | undefined;
  /** Set when pu itself stopped the agent after its work was done (the queue, a group). */
  finishedBy?: string | null | undefined;
  /** An agent on a host that does not answer now: what it shows is as last seen. */
  hostState?: "connected" | "unreachable" | undefined;
  /** Set when pu interrupted the agent for crossing its budget (until the budget is raised). */
  budget?: { exceededAt?: string | undefined } | undefined;
}

/**
 * `waiting (done)` for a finished turn, `waiting (permission)` for a dialog, `broken (done)` for one pu
 * stopped after its work, `broken (exited 0)` for an agent that finished cleanly (the seed's status has no "succeeded"), `waiting (benched)`
 * for a suspended one; otherwise the status itself. An agent on an unreachable host adds
 * `(host unreachable)`: its status is the last one seen, never guessed.
 */
export function statusLabel(agent: StatusLabelInputs): string {
  return withHostState(localStatusLabel(agent), agent.hostState);
}

/** A status word of an agent on a host that does not answer now says so: what it shows is as last seen. */
export function withHostState(label: string, hostState: StatusLabelInputs["hostState"]): string {
  return hostState === "unreachable" ? `${label} (host unreachable)` : label;
}

function localStatusLabel(agent: StatusLabelInputs): string {
  if (agent.suspended) return `${agent.status} (benched)`;
  if (agent.budget?.exceededAt && agent.status !== "broken") return "budget";
  if (agent.status === "broken" && agent.finishedBy) return "broken (done)";
  if (agent.status === "broken" && agent.exitCode === 0) return "broken (exited 0)";
  if (agent.status === "waiting" && agent.waitingReason === "turn_end") return "waiting (done)";
  if (agent.status === "waiting" && agent.waitingReason === "permission") return "waiting (permission)";
  return agent.status;
}

/** A turn ended or a dialog asks: the agent waits for a person (what `pu web` notifies about). */
export function waitsForPerson(agent: StatusLabelInputs): boolean {
  return !agent.suspended && agent.status === "waiting" && (agent.waitingReason === "turn_end" || agent.waitingReason === "permission");
}
