import { Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { checkedName, NOUNS } from "../../definition-commands.js";
import { PuCommand } from "../../pu-command.js";

/** `pu schedule enable|disable NAME`: one request, the two verbs differ only in the flag they set. */
export abstract class ScheduleSetEnabledCommand extends PuCommand {
  abstract readonly enabled: boolean;

  name = Option.String({ name: "NAME" });

  async run(): Promise<number> {
    const name = checkedName(NOUNS.schedule, this.name);
    const projectRoot = this.projectRoot();
    const enabled = this.enabled;
    const result = await withDaemon((client) => client.request("schedule_enable", { projectRoot, name, enabled }));
    return this.report.result(result, (out) => {
      out.line(`schedule ${result.name} ${enabled ? "enabled" : "disabled"}${result.nextRun ? `; next run ${result.nextRun}` : ""}`);
    });
  }
}
