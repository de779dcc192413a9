import fs from "node:fs";

/**
 * One structured event per line (JSON) in a log under `$PU_HOME`: the daemon's `daemon.log`, the
 * web server's `web.log`. Callers never pass a token, a secret or a query string.
 */
export interface EventLog {
  event(event: string, fields?: Record<string, unknown>): void;
  close(): void;
}

// Errors do not survive JSON.stringify (their fields are non-enumerable), so flatten them.
function plain(value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { message: value.message, ...(code !== undefined ? { code } : {}), stack: value.stack };
  }
  return value;
}

/**
 * Opens the log in append mode (0600). Its process writes it itself (rather than relying on a
 * redirected stderr) so the log is complete no matter how the process was started.
 * Writes are synchronous: lines are small, and a crash right after an event should not lose it.
 */
export function openEventLog(filePath: string): EventLog {
  let fd: number | undefined = fs.openSync(filePath, "a", 0o600);
  return {
    event(event, fields = {}) {
      if (fd === undefined) return;
      const record: Record<string, unknown> = { time: new Date().toISOString(), pid: process.pid, event };
      for (const [key, value] of Object.entries(fields)) record[key] = plain(value);
      let line: string;
      try {
        line = JSON.stringify(record);
      } catch {
        line = JSON.stringify({ time: record.time, pid: process.pid, event, note: "fields not serializable" });
      }
      try {
        fs.writeSync(fd, line + "\n");
      } catch {
        // A full disk must not take the process down with it.
      }
    },
    close() {
      if (fd === undefined) return;
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
      fd = undefined;
    },
  };
}
