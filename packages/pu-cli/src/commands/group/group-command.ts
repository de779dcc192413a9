import { Option } from "../../clipanion.js";
import { withDaemon } from "../../daemon-client.js";
import { writeGroupCompare, writeGroupStatus } from "../../group-view.js";
import { PuCommand } from "../../pu-command.js";

/** `pu group status|compare|cancel ID`: one request about one group, answered with its view. */
export abstract class GroupCommand extends PuCommand {
  abstract readonly request: "group_status" | "group_cancel";
  /** compare prints the member table; the others the status lines. */
  readonly table: boolean = false;

  groupId = Option.String({ name: "ID" });

  async run(): Promise<number> {
    const projectRoot = this.projectRoot();
    const group = await withDaemon((client) => client.request(this.request, { projectRoot, groupId: this.groupId }));
    return this.report.result(group, (out) => (this.table ? writeGroupCompare(out, group) : writeGroupStatus(out, group)));
  }
}
