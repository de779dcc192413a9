// host_add, host_list, host_remove, host_check, host_install.
import { PuError } from "@pu/core/errors";
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

type HostsContext = Pick<EngineServices, "hosts" | "remote">;

export async function handleHostAdd(ctx: HostsContext, req: RequestOf<"host_add">): Promise<ResultOf<"host_add">> {
  return { host: await ctx.hosts.add({ name: req.name, transport: req.transport, root: req.root, maxAgents: req.maxAgents ?? null }) };
}

export async function handleHostList(ctx: HostsContext): Promise<ResultOf<"host_list">> {
  const hosts = await ctx.hosts.list();
  const listed = await Promise.all(hosts.map(async (h) => ({ ...h, link: await ctx.remote.linkView(h) })));
  // Unreadable placements count nothing on any host: said, so AGENTS 0 is not read as nothing there.
  const problem = ctx.remote.placementsProblem();
  return { hosts: listed, ...(problem ? { problems: [problem] } : {}) };
}

export async function handleHostRemove(ctx: HostsContext, req: RequestOf<"host_remove">): Promise<ResultOf<"host_remove">> {
  await ctx.remote.refreshHost(req.name);
  // What pu placed there is not known while the record is unreadable, and forgetting it would
  // fail after the host was gone: refused (even --force) before anything changes.
  const unreadable = ctx.remote.placementsProblem();
  if (unreadable) throw new PuError("INVALID_STATE", `host ${req.name} not removed: ${unreadable}`);
  await ctx.hosts.get(req.name);
  const held = ctx.remote.holdings(req.name);
  if ((held.agents > 0 || held.worktrees > 0) && !req.force) {
    throw new PuError("INVALID_STATE", `host ${req.name} holds ${held.agents} running agent(s) and ${held.worktrees} unmerged worktree(s) pu placed there; kill, merge or clean them first, or --force (they are forgotten here and left running on the host)`);
  }
  // The placements go first: if that fails, hosts.json is unchanged and the command can be run
  // again; the other order left placements naming a host that no longer exists.
  await ctx.remote.forgetHost(req.name);
  const host = await ctx.hosts.remove(req.name);
  return { host };
}

export function handleHostCheck(ctx: HostsContext, req: RequestOf<"host_check">): Promise<ResultOf<"host_check">> {
  return ctx.hosts.check(req.name);
}

export function handleHostInstall(ctx: HostsContext, req: RequestOf<"host_install">): Promise<ResultOf<"host_install">> {
  return ctx.hosts.install(req.name, req.packedDir);
}
