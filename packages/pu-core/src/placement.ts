// Where the daemon places the agents it launches on its own (a group's members): this machine
// or the hosts the person listed (`pu group run --on local,gpu-box`). The rules are pure: which
// names a list may hold, and which place the next launch goes to.
import { PuError } from "./errors.js";
import { HOST_NAME_PATTERN, LOCAL_PLACE } from "./hosts-file.js";

/** A list of places as the person typed it (`local,gpu-box`): checked, in order, each once. */
export function parsePlaces(names: readonly string[], option: string): string[] {
  const places = names.map((n) => n.trim()).filter((n) => n !== "");
  if (places.length === 0) throw new PuError("INVALID_ARGUMENT", `${option} needs at least one place: ${LOCAL_PLACE} (this machine) or a host's name`);
  for (const place of places) {
    if (!HOST_NAME_PATTERN.test(place)) throw new PuError("INVALID_ARGUMENT", `${option}: "${place}" is not a host name (${LOCAL_PLACE} is this machine; pu host list shows the hosts)`);
  }
  const repeated = places.find((p, i) => places.indexOf(p) !== i);
  if (repeated !== undefined) throw new PuError("INVALID_ARGUMENT", `${option}: ${repeated} is listed twice`);
  return places;
}

/**
 * The place the next launch of one owner goes to: among the places with room, the one that
 * holds the fewest of this owner's launches (so a group spreads over its hosts), the first
 * listed on a tie. Undefined while no place has room.
 */
export function choosePlace(places: readonly string[], hasRoom: (place: string) => boolean, held: (place: string) => number): string | undefined {
  let best: string | undefined;
  for (const place of places) {
    if (!hasRoom(place)) continue;
    if (best === undefined || held(place) < held(best)) best = place;
  }
  return best;
}
