// group_run, group_list, group_status, group_cancel, group_diff, group_pick.
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import { groupView } from "../orchestration/groups/group-service.js";
import type { EngineServices } from "../services.js";

export type GroupsContext = Pick<EngineServices, "groups" | "state" | "usage">;

export async function handleGroupRun(services: GroupsContext, req: RequestOf<"group_run">): Promise<ResultOf<"group_run">> {
  const root = await services.state.project(req.projectRoot);
  const group = await services.groups.create({
    root,
    kind: req.kind,
    delegators: req.agents,
    sharedPrompt: req.prompt,
    prompts: req.prompts,
    ...(req.aggregate !== undefined ? { aggregate: req.aggregate } : {}),
    ...(req.join !== undefined ? { join: req.join } : {}),
    ...(req.quorum !== undefined ? { quorum: req.quorum } : {}),
    ...(req.gate !== undefined
      ? { gate: { run: req.gate, ...(req.gateTimeoutSeconds !== undefined ? { timeout_seconds: req.gateTimeoutSeconds } : {}), ...(req.gateExpectExit !== undefined ? { expect_exit: req.gateExpectExit } : {}) } }
      : {}),
    ...(req.maxRetries !== undefined ? { maxRetries: req.maxRetries } : {}),
    ...(req.timeoutMinutes !== undefined ? { timeoutMinutes: req.timeoutMinutes } : {}),
    ...(req.judge !== undefined ? { judge: req.judge } : {}),
    // A member placed in an existing worktree (a ticket's later step on this host) shares it.
    ...(req.base !== undefined && req.placedMember?.worktree === undefined ? { base: req.base } : {}),
    ...(req.placedMember?.worktree !== undefined ? { sharedWorktree: req.placedMember.worktree } : {}),
    ...(req.maxCost !== undefined ? { maxCost: req.maxCost } : {}),
    ...(req.maxTokens !== undefined ? { maxTokens: req.maxTokens } : {}),
    ...(req.on !== undefined ? { on: req.on } : {}),
    ...(req.placedMember !== undefined ? { placedMember: req.placedMember } : {}),
  });
  return groupView(group);
}

export async function handleGroupList(services: GroupsContext, req: RequestOf<"group_list">): Promise<ResultOf<"group_list">> {
  return services.groups.list(await services.state.project(req.projectRoot));
}

export async function handleGroupStatus(services: GroupsContext, req: RequestOf<"group_status">): Promise<ResultOf<"group_status">> {
  const root = await services.state.project(req.projectRoot);
  const view = groupView(services.groups.find(root, req.groupId));
  // What each member cost (`pu group compare`).
  const figures = await services.usage.figuresOf(root, view.members.flatMap((m) => (m.agentId ? [m.agentId] : [])));
  for (const member of view.members) member.usage = member.agentId ? (figures.get(member.agentId) ?? null) : null;
  return view;
}

export async function handleGroupCancel(services: GroupsContext, req: RequestOf<"group_cancel">): Promise<ResultOf<"group_cancel">> {
  return groupView(await services.groups.cancel(await services.state.project(req.projectRoot), req.groupId));
}

export async function handleGroupDiff(services: GroupsContext, req: RequestOf<"group_diff">): Promise<ResultOf<"group_diff">> {
  return services.groups.diff(await services.state.project(req.projectRoot), req.groupId, req.variant, req.stat === true);
}

export async function handleGroupPick(services: GroupsContext, req: RequestOf<"group_pick">): Promise<ResultOf<"group_pick">> {
  return services.groups.pick(await services.state.project(req.projectRoot), req.groupId, req.variant, req.keep === true, req.strategy);
}
