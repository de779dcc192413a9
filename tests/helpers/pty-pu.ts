// Runs `pu ARGS` on a real pseudo-terminal (node-pty), as a user at a terminal would:
// stdin is a TTY, so `pu attach` goes raw and interactive.
import * as pty from "node-pty";
import { PU_BIN, type PuSandbox } from "./pu-sandbox.js";
import { waitFor } from "./wait-for.js";

export interface PtyPu {
  pid: number;
  /** Everything the pu process has written to its terminal so far. */
  screen(): string;
  type(data: string): void;
  /** Waits until the screen contains `text` (after `from` characters, if given). */
  seen(text: string, from?: number, timeoutMs?: number): Promise<void>;
  exited: Promise<{ exitCode: number; signal?: number }>;
  kill(): void;
}

export function runPuOnPty(sandbox: PuSandbox, args: string[], cols = 100, rows = 30): PtyPu {
  const term = pty.spawn(process.execPath, [PU_BIN, ...args], {
    name: "xterm-256color",
    cols,
    rows,
    cwd: sandbox.root,
    env: { ...sandbox.env(), TERM: "xterm-256color" } as Record<string, string>,
  });
  sandbox.trackPid(term.pid);
  let screen = "";
  term.onData((data) => (screen += data));
  const exited = new Promise<{ exitCode: number; signal?: number }>((resolve) => term.onExit((e) => resolve(e)));
  return {
    pid: term.pid,
    screen: () => screen,
    type: (data) => term.write(data),
    seen: async (text, from = 0, timeoutMs = 30_000) => {
      try {
        await waitFor(`${JSON.stringify(text)} on pu's terminal`, () => screen.indexOf(text, from) >= 0, timeoutMs);
      } catch (error) {
        throw new Error(`${(error as Error).message}; the screen ends with ${JSON.stringify(screen.slice(-400))}`);
      }
    },
    exited,
    kill: () => {
      try {
        term.kill("SIGKILL");
      } catch {
        // already gone
      }
    },
  };
}
