// host_add, host_list, host_remove, host_check, host_install.
import type { RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { EngineServices } from "../services.js";

type HostsContext = Pick<EngineServices, "hosts">;

export async function handleHostAdd(ctx: HostsContext, req: RequestOf<"host_add">): Promise<ResultOf<"host_add">> {
  return { host: await ctx.hosts.add({ name: req.name, transport: req.transport, root: req.root, maxAgents: req.maxAgents ?? null }) };
}

export async function handleHostList(ctx: HostsContext): Promise<ResultOf<"host_list">> {
  return { hosts: await ctx.hosts.list() };
}

export async function handleHostRemove(ctx: HostsContext, req: RequestOf<"host_remove">): Promise<ResultOf<"host_remove">> {
  return { host: await ctx.hosts.remove(req.name) };
}

export function handleHostCheck(ctx: HostsContext, req: RequestOf<"host_check">): Promise<ResultOf<"host_check">> {
  return ctx.hosts.check(req.name);
}

export function handleHostInstall(ctx: HostsContext, req: RequestOf<"host_install">): Promise<ResultOf<"host_install">> {
  return ctx.hosts.install(req.name, req.packedDir);
}
