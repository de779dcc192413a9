/**
 * What every launch the daemon makes on its own asks first: is automatic work paused, and is
 * there a free slot. The work queue owns the caps and `paused` (QueueService.launchSlots);
 * plan workers take slots from it like tickets, so one cap covers them all.
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
}
