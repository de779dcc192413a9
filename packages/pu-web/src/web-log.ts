import fs from "node:fs";

/** One JSON line per event in `$PU_HOME/web.log`. Callers never pass a token, a secret or a query string. */
export interface WebLog {
  event(event: string, fields?: Record<string, unknown>): void;
  close(): void;
}

export function openWebLog(filePath: string): WebLog {
  let fd: number | undefined = fs.openSync(filePath, "a", 0o600);
  return {
    event(event, fields = {}) {
      if (fd === undefined) return;
      const record: Record<string, unknown> = { time: new Date().toISOString(), pid: process.pid, event };
      for (const [key, value] of Object.entries(fields)) record[key] = value instanceof Error ? { message: value.message } : value;
      try {
        fs.writeSync(fd, JSON.stringify(record) + "\n");
      } catch {
        // A full disk must not take the server down.
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
