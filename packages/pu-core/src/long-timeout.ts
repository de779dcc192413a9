/** setTimeout's longest delay (≈ 24.8 days): Node fires a longer one after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `fn` once `ms` have passed, however long that is. Limits people write in minutes or
 * seconds (a step's timeout_minutes, a gate's timeout_seconds) can exceed what setTimeout takes,
 * and would then fire at once; past MAX_TIMER_MS this waits in pieces. Returns the cancel.
 */
export function setLongTimeout(fn: () => void, ms: number): () => void {
  const deadline = Date.now() + ms;
  let timer: ReturnType<typeof setTimeout>;
  const arm = (wait: number): void => {
    const piece = Math.max(0, Math.min(wait, MAX_TIMER_MS));
    timer = setTimeout(() => {
      const left = deadline - Date.now();
      if (wait > MAX_TIMER_MS && left > 0) arm(left);
      else fn();
    }, piece);
  };
  arm(ms);
  return () => clearTimeout(timer);
}
