import QueueShowCommand from "./queue/show.js";

/** `pu queue` alone: the same as `pu queue show`. */
export default class QueueCommand extends QueueShowCommand {
  static override paths = [["queue"]];
}
