/**
 * What every launch the daemon makes on its own asks first: is automatic work paused, and is
 * there a free slot. The work queue owns the caps and `paused`; until a project has a queue,
 * launches are unlimited and never paused. Plan workers, group members and queue tickets all
 * ask the same object, so one cap covers them all.
 */
export interface LaunchSlots {
  /** Automatic launches wait while this is true; agents already running go on. */
  paused(): boolean;
  /** Launches the caps allow right now for this project (Infinity: no cap). */
  free(projectRoot: string): number;
  /** Calls `listener` when `paused` or the free slots may have changed. */
  onChange(listener: () => void): () => void;
}

export class UnlimitedLaunchSlots implements LaunchSlots {
  paused(): boolean {
    return false;
  }

  free(): number {
    return Number.POSITIVE_INFINITY;
  }

  onChange(): () => void {
    return () => undefined;
  }
}
