import { isPuError, PuError } from "@pu/core/errors";
import { isProcessAlive, readDaemonPid, startDaemonProcess, tryConnectDaemon, waitForDaemon, waitForExit } from "./daemon-client.js";

// Shutdown stops every agent (each with a grace period), so give it time.
const STOP_TIMEOUT_MS = 30_000;
const START_TIMEOUT_MS = 5_000;

export interface StopOutcome {
  wasRunning: boolean;
  pid?: number;
}

/** Asks the daemon to shut down and waits until its process is gone. */
export async function stopDaemon(home: string): Promise<StopOutcome> {
  let pid: number | undefined;
  try {
    const client = await tryConnectDaemon(home);
    if (!client) return { wasRunning: false };
    pid = client.daemon.pid;
    try {
      await client.request("shutdown", {}, { timeoutMs: STOP_TIMEOUT_MS });
    } catch (error) {
      // The daemon may close the connection before (or instead of) replying; the pid check decides.
      if (!isPuError(error) || (error.code !== "DAEMON_UNAVAILABLE" && error.code !== "TIMEOUT")) throw error;
    } finally {
      client.close();
    }
  } catch (error) {
    // A daemon speaking another protocol cannot be asked; its pid file still says who it is.
    if (!isPuError(error) || error.code !== "PROTOCOL_MISMATCH") throw error;
    pid = readDaemonPid(home);
    if (pid === undefined || !isProcessAlive(pid)) throw error;
    process.kill(pid, "SIGTERM");
  }
  if (!(await waitForExit(pid, STOP_TIMEOUT_MS))) {
    throw new PuError("TIMEOUT", `pu daemon (pid ${pid}) did not exit within ${STOP_TIMEOUT_MS / 1000}s`);
  }
  return { wasRunning: true, pid };
}

export interface StartOutcome {
  alreadyRunning: boolean;
  pid: number;
}

export async function startDaemon(home: string): Promise<StartOutcome> {
  const running = await tryConnectDaemon(home);
  if (running) {
    running.close();
    return { alreadyRunning: true, pid: running.daemon.pid };
  }
  await startDaemonProcess(home);
  const client = await waitForDaemon(home, START_TIMEOUT_MS);
  client.close();
  return { alreadyRunning: false, pid: client.daemon.pid };
}
