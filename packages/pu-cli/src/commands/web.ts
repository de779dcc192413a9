import { Command, Option } from "../clipanion.js";
import { connectDaemon, daemonHome } from "../daemon-client.js";
import { LOOPBACK_HOSTS } from "@pu/core/web-server-file";
import { PuCommand } from "../pu-command.js";
import { ensureWebServer, openInBrowser } from "../web-control.js";
import { CliUsageError } from "../usage-error.js";

export default class WebCommand extends PuCommand {
  static override paths = [["web"]];
  static override usage = Command.Usage({
    category: "Web",
    description: "Open pu in a browser: every agent's live terminal, diffs, the queue, groups, plans",
    details: `
      Starts pu's web server (or finds the running one) and opens a one-time login link in your
      browser, or prints it. The server listens on 127.0.0.1 and ::1 only, keeps running after
      this command returns, and stops with \`pu web stop\` or \`pu daemon stop\`. Each link logs
      one browser in once (a session cookie); run \`pu web\` again for another browser. To reach
      it from another device, forward the port over SSH (\`ssh -L PORT:127.0.0.1:PORT host\`).
      See docs/web.md for what the page guards against.
    `,
    examples: [
      ["Open it", "$0 web"],
      ["Print the link as JSON (for scripts)", "$0 web --no-open --json"],
      ["A fixed port", "$0 web --port 7420"],
    ],
  });

  noOpen = Option.Boolean("--no-open", false, { description: "Print the link instead of opening a browser" });
  port = Option.String("--port", { description: "Port to listen on (default: any free one)" });
  bind = Option.String("--bind", { description: "Address to listen on instead of loopback (needs --insecure-bind)" });
  insecureBind = Option.Boolean("--insecure-bind", false, { description: "Allow --bind with an address other machines can reach" });

  async run(): Promise<number> {
    const port = this.port === undefined ? undefined : Number(this.port);
    if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) throw new CliUsageError(`--port must be 1-65535, not ${this.port}`);
    if (this.bind !== undefined && !LOOPBACK_HOSTS.includes(this.bind) && !this.insecureBind) {
      throw new CliUsageError(`--bind ${this.bind} would let other machines reach pu; add --insecure-bind if that is what you want (a login link is still required)`);
    }
    const home = daemonHome();
    // The server is a daemon client: make sure there is a daemon to talk to first.
    (await connectDaemon({ home })).close();
    const server = await ensureWebServer(home, { port, bind: this.bind, insecureBind: this.insecureBind });
    const opened = !this.noOpen && !this.json && (await openInBrowser(home, server.url));
    return this.report.result({ url: server.url, port: server.port, pid: server.pid, started: server.started, opened }, (out) => {
      out.line(`pu web ${server.started ? "started" : "is running"} (pid ${server.pid}) on port ${server.port}`);
      out.line(opened ? "opened in your browser; this link works once:" : "open this link (it works once):");
      out.line(`  ${server.url}`);
    });
  }
}
