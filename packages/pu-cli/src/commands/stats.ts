import StatsShowCommand from "./stats/show.js";

/** `pu stats` alone: the same as `pu stats show`. */
export default class StatsCommand extends StatsShowCommand {
  static override paths = [["stats"]];
}
