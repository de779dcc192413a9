// The daemon's log, `$PU_HOME/daemon.log`: pu-core's event log (the web server writes its own
// with the same format), under the name the engine's floors and tests know it by.
import { openEventLog, type EventLog } from "@pu/core/event-log";

export type DaemonLog = EventLog;

export function openDaemonLog(filePath: string): DaemonLog {
  return openEventLog(filePath);
}
