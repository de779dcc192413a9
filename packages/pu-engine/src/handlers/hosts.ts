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
  return { hosts: await Promise.all(hosts.map(async (h) => ({ ...h, link: await ctx.remote.linkView(h) }))) };
}

export async function handleHostRemove(ctx: HostsContext, req: RequestOf<"host_remove">): Promise<ResultOf<"host_remove">> {
  await ctx.remote.refreshHost(req.name);
  const held = ctx.remote.holdings(req.name);
  if ((held.agents > 0 || held.worktrees > 0) && !req.force) {
    throw new PuError("INVALID_STATE", `host ${req.name} holds ${held.agents} running agent(s) and ${held.worktrees} unmerged worktree(s) pu placed there; kill, merge or clean them first, or --force (they are forgotten here and left running on the host)`);
  }
  const host = await ctx.hosts.remove(req.name);
  await ctx.remote.forgetHost(req.name);
  return { host };
}

export function handleHostCheck(ctx: HostsContext, req: RequestOf<"host_check">): Promise<ResultOf<"host_check">> {
  return ctx.hosts.check(req.name);
}

export function handleHostInstall(ctx: HostsContext, req: RequestOf<"host_install">): Promise<ResultOf<"host_install">> {
  return ctx.hosts.install(req.name, req.packedDir);
}
