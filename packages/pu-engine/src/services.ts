/**
 * What the request handlers are given: the engine's data (EngineState) and the services
 * daemon.ts builds on it. A handler reaches a service only through here.
 */
import type { AgentService } from "./agents/agent-service.js";
import type { AutomationService } from "./automation/automation-service.js";
import type { DaemonService } from "./daemon-service.js";
import { OwnedWork } from "./agents/owners.js";
import type { GroupService } from "./orchestration/groups/group-service.js";
import type { HostService } from "./hosts/host-service.js";
import type { RemoteAgentService } from "./hosts/remote-agents.js";
import type { PlanService } from "./orchestration/plans/plan-service.js";
import type { EngineState } from "./state.js";
import type { QueueService } from "./orchestration/queue/queue-service.js";
import type { StatusWatch } from "./status-watch.js";
import type { UsageService } from "./usage/usage-service.js";
import type { WorktreeService } from "./worktrees/worktree-service.js";

export interface EngineServices {
  state: EngineState;
  agents: AgentService;
  worktrees: WorktreeService;
  automation: AutomationService;
  daemon: DaemonService;
  statusWatch: StatusWatch;
  plans: PlanService;
  groups: GroupService;
  queue: QueueService;
  hosts: HostService;
  /** Agents and worktrees placed on hosts: requests about their ids are routed there. */
  remote: RemoteAgentService;
  /** Tokens and cost from the agent CLIs' records; budgets. */
  usage: UsageService;
}

/** Who owns what in a project now (tickets in flight, groups not finished, running plans): asked by `pu clean` and `pu kill`. */
export function ownedWorkIn(services: Pick<EngineServices, "queue" | "groups" | "plans">, root: string): OwnedWork {
  return OwnedWork.of([services.queue, services.groups, services.plans], root);
}
