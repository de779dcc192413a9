import { Command, Option } from "../clipanion.js";
import { withDaemon } from "../daemon-client.js";
import { PuCommand } from "../pu-command.js";
import { CliUsageError } from "../usage-error.js";

const SIGNALS = { busy: "busy", "turn-end": "turn_end", permission: "permission" } as const;
type SignalName = keyof typeof SIGNALS;

export default class SignalCommand extends PuCommand {
  static override paths = [["signal"]];
  static override usage = Command.Usage({
    description: "Report an agent's turn state to the daemon (run by agent CLI hooks)",
    details:
      "pu passes Claude Code a settings file whose Stop, UserPromptSubmit and Notification hooks run this with the agent's `PU_AGENT_ID`; a signal wins over what the agent's screen suggests until the next Enter reaches it. SIGNAL is `busy`, `turn-end` or `permission`. With `--hook` it reads and ignores the hook's input on stdin, prints nothing (Claude adds a UserPromptSubmit hook's output to the prompt) and never fails the calling CLI: a problem is one line on stderr and exit 0.",
    examples: [
      ["Claude's Stop hook", "$0 signal turn-end --hook"],
      ["From a script, for a given agent", "$0 signal busy --agent ag-ab12cd34"],
    ],
  });

  signal = Option.String({ name: "SIGNAL" });
  agent = Option.String("--agent", { description: "The agent (default: $PU_AGENT_ID)" });
  hook = Option.Boolean("--hook", false, { description: "Run as a CLI hook: drain stdin, exit 0 whatever happens" });

  async run(): Promise<number> {
    if (this.hook) process.stdin.resume().on("error", () => undefined);
    try {
      if (!Object.hasOwn(SIGNALS, this.signal)) throw new CliUsageError(`SIGNAL must be one of ${Object.keys(SIGNALS).join(", ")}, got "${this.signal}"`);
      const agentId = this.agent ?? process.env.PU_AGENT_ID;
      if (!agentId) throw new CliUsageError("no agent: give --agent ID or run inside a pu agent (PU_AGENT_ID)");
      const signal = SIGNALS[this.signal as SignalName];
      // A hook must never start a daemon: the one that launched the agent is the one to tell.
      const reply = await withDaemon((client) => client.request("agent_signal", { agentId, signal }), { autoStart: false });
      // Claude adds a UserPromptSubmit hook's stdout to the prompt: a hook says nothing.
      if (this.hook) return 0;
      return this.report.result(reply, (out) => out.line(`${agentId}: ${reply.status}${reply.waitingReason ? ` (${reply.waitingReason})` : ""}`));
    } catch (error) {
      if (!this.hook) throw error;
      this.report.error(error);
      return 0;
    } finally {
      if (this.hook) process.stdin.destroy();
    }
  }
}
