import ReviewListCommand from "./review/list.js";

/** `pu review` alone: the same as `pu review list`. */
export default class ReviewCommand extends ReviewListCommand {
  static override paths = [["review"]];
}
