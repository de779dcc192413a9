import { createConnection } from "node:net";
import { PuError } from "@pu/core/errors";
import { socketPath } from "@pu/core/paths";
import { Command } from "../../clipanion.js";
import { daemonHome } from "../../daemon-client.js";
import { startDaemon } from "../../daemon-control.js";
import { PuCommand } from "../../pu-command.js";

export default class DaemonStdioCommand extends PuCommand {
  static override paths = [["daemon", "stdio"]];
  static override usage = Command.Usage({
    category: "Daemon",
    description: "Bridge stdin/stdout to this machine's pu daemon (what another machine's pu runs over ssh or exec)",
    details: `
      Starts the daemon if it is not running, then copies bytes between stdin/stdout and the
      daemon's socket until either side closes. The bytes are pu's framed protocol, hello and
      version check included: nothing else is written to stdout. pu opens no network port for
      this; the transport (OpenSSH, \`podman exec -i\`, \`kubectl exec -i\`) is the person's own.
    `,
    examples: [["What a control plane runs on a host", "ssh me@gpu-box pu daemon stdio"]],
  });

  async run(): Promise<number> {
    const home = daemonHome();
    await startDaemon(home);
    const socket = createConnection(socketPath(home));
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", (error) => reject(new PuError("DAEMON_UNAVAILABLE", `cannot reach the pu daemon at ${socketPath(home)}: ${error.message}`)));
    });
    // Both directions with backpressure; the bridge ends when the daemon or the far side does.
    process.stdin.pipe(socket);
    socket.pipe(process.stdout);
    return new Promise<number>((resolve) => {
      process.stdin.once("end", () => socket.end());
      socket.once("close", () => resolve(0));
      socket.once("error", () => resolve(4));
      process.stdout.once("error", () => {
        socket.destroy();
        resolve(0);
      });
    });
  }
}
