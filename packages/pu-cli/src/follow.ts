import { PuError } from "@pu/core/errors";
import type { Client } from "@pu/ipc/client";
import type { Report } from "./report.js";

export interface FollowOptions {
  agentId: string;
  fromOffset?: number;
}

/**
 * Streams an agent's output to stdout (replay, then live; NDJSON `{offset, data}` lines with
 * `--json`) until the agent exits (0), the user interrupts (0) or the daemon goes away
 * (DAEMON_UNAVAILABLE). Used by `logs --follow` and by `attach` when stdin is not a terminal.
 */
export async function followOutput(client: Client, report: Report, { agentId, fromOffset }: FollowOptions): Promise<number> {
  const fields = fromOffset === undefined ? { agentId } : { agentId, fromOffset };
  const stream = await client.openStream("attach", fields);
  let interrupted = false;
  const stop = () => {
    interrupted = true;
    stream.close();
    client.close();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const { result } = stream;
  // An agent that already exited sends its remaining replay and nothing more.
  let exitCode: number | undefined = result.exited ? (result.exitCode ?? -1) : undefined;
  let position = result.offset;
  let shutdownMessage: string | undefined;
  try {
    if (exitCode === undefined || position < result.endOffset) {
      for await (const event of stream) {
        if (event.type === "output") {
          // Waiting for stdout keeps a slow reader's backlog in the daemon's bounded viewer, not here.
          await report.streamEvent({ offset: event.offset, data: event.data }, (out) => out.write(event.data));
          position = event.offset + event.data.length;
          if (result.exited && position >= result.endOffset) break;
        } else if (event.type === "exit") {
          exitCode = event.exitCode;
          break;
        } else if (event.type === "notice" && event.code === "SHUTDOWN") {
          shutdownMessage = event.message;
          break;
        } else if (event.type === "notice") {
          report.note(`pu: ${event.message}`);
        }
      }
    }
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    stream.close();
  }
  if (exitCode !== undefined) {
    // A JSON reader learns how the stream ended; a person saw the output stop.
    await report.streamEvent({ agentId, exitCode }, () => {});
    return 0;
  }
  if (interrupted) return 0;
  throw new PuError("DAEMON_UNAVAILABLE", shutdownMessage ?? `lost the connection to the pu daemon while following ${agentId}`);
}
