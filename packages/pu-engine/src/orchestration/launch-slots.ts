/**
 * What every launch the daemon makes on its own asks first: is automatic work paused, and is
 * there a free slot. The one SlotLedger (slots.ts) answers it for tickets, plan workers and
 * group members alike, so one cap covers them all.
 */
export interface LaunchSlots {
  /** Automatic launches wait while this is true; agents already running go on. */
  paused(): boolean;
  /** Launches the caps allow right now for this project. */
  free(projectRoot: string): Promise<number>;
  /** Counts one launch against the caps until the returned release is called. */
  take(projectRoot: string): () => void;
  /** Calls `listener` when `paused` or the free slots may have changed. */
  onChange(listener: () => void): () => void;
  /**
   * Waits in line for a slot. Requests of one `owner` (a group) are served in order; owners and
   * the ticket queue take turns, so a big group cannot starve tickets nor tickets a group.
   */
  request(projectRoot: string, owner: string): SlotRequest;
  /**
   * Waits in line, as `request`, for a slot at one of `places` (`local`: this machine's caps;
   * a host: its `--max-agents`): the one with room holding the fewest of this owner's slots.
   */
  requestPlace(projectRoot: string, owner: string, places: readonly string[]): PlaceRequest;
  /** Counts one launch at `place` (as `take` does here) until the returned release is called. */
  takeAt(projectRoot: string, owner: string, place: string): () => void;
}

export interface PlaceRequest {
  /** Settles with the slot's release and its place once granted (never while paused). */
  granted: Promise<{ release: () => void; place: string }>;
  /** Leaves the line; a slot granted already is not released by this. */
  cancel(): void;
}

export interface SlotRequest {
  /** Settles with the slot's release once the slot is granted (never while paused). */
  granted: Promise<() => void>;
  /** Leaves the line; a slot granted already is not released by this. */
  cancel(): void;
}
