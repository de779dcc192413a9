// Viewers of agents on hosts: `pu attach` relayed from the host's daemon over a bridge of the
// viewer's own (the host's viewer ends with it), and resize sent over that same bridge, since
// the host sizes the terminal per viewer.
import type { AttachResult, RequestOf, ResultOf } from "@pu/ipc/protocol";
import type { ConnectionContext } from "@pu/ipc/server";
import type { HostBridge, HostLinks } from "./host-links.js";
import type { HostService } from "./host-service.js";

export class RemoteViewers {
  /** Remote attaches by local connection and agent. */
  private readonly bridges = new Map<string, HostBridge>();

  constructor(
    private readonly hosts: HostService,
    private readonly links: HostLinks,
  ) {}

  /** Over the viewer's bridge when it is attached, else the shared link (bounded by `bounded`). */
  async resize(hostName: string, req: RequestOf<"resize">, conn: ConnectionContext, bounded: <T>(work: Promise<T>) => Promise<T>): Promise<ResultOf<"resize">> {
    const fields = { agentId: req.agentId, cols: req.cols, rows: req.rows };
    const bridge = this.bridges.get(`${conn.connectionId}:${req.agentId}`);
    if (bridge) return bridge.client.request("resize", fields);
    const host = await this.hosts.get(hostName);
    return bounded(this.links.request(host, "resize", fields));
  }

  /** Events passed on at the local viewer's pace, so the host daemon's slow-viewer rule applies end to end. */
  async attach(hostName: string, req: RequestOf<"attach">, conn: ConnectionContext): Promise<AttachResult> {
    const host = await this.hosts.get(hostName);
    const bridge = await this.links.dedicated(host);
    const key = `${conn.connectionId}:${req.agentId}`;
    let stream: Awaited<ReturnType<typeof bridge.client.openStream<"attach">>>;
    try {
      stream = await bridge.client.openStream("attach", req.fromOffset === undefined ? { agentId: req.agentId } : { agentId: req.agentId, fromOffset: req.fromOffset });
    } catch (error) {
      bridge.close();
      throw error;
    }
    this.bridges.get(key)?.close();
    this.bridges.set(key, bridge);
    let drained: (() => void) | undefined;
    conn.onDrain(() => {
      const waiter = drained;
      drained = undefined;
      waiter?.();
    });
    let exited = false;
    conn.onClose(() => {
      bridge.close();
      if (this.bridges.get(key) === bridge) this.bridges.delete(key);
    });
    void (async () => {
      try {
        for await (const event of stream) {
          if (conn.closed) break;
          if (event.type === "exit") exited = true;
          if (!conn.send({ ...event, id: req.id })) await new Promise<void>((resolve) => (drained = resolve));
        }
      } catch {
        // The bridge failed: said below.
      }
      if (!conn.closed && !exited) {
        conn.send({ type: "notice", id: req.id, agentId: req.agentId, code: "DETACHED", message: `lost the connection to host ${hostName}; the agent keeps running there (\`pu attach ${req.agentId}\` again resumes from where you were)` });
        conn.close();
      }
    })();
    return stream.result;
  }
}
