// A stand-in for "a daemon, then a CLI" with nothing of pu's in it, for the throughput
// figures' same-hops reference. Two roles, chosen by argv[2]:
//   read SCRIPT  — runs SCRIPT in node-pty (the options pu's daemon uses) and writes every byte
//                  to stdout; a line on stdin is typed into the terminal; exits once the
//                  program has exited and its last output is written.
//   forward      — copies stdin to stdout, the way `pu logs --follow` writes what it receives.
import { loadPty } from "./lib.mjs";

const [role, script] = process.argv.slice(2);
if (role === "forward") {
  process.stdin.on("data", (chunk) => {
    if (!process.stdout.write(chunk)) {
      process.stdin.pause();
      process.stdout.once("drain", () => process.stdin.resume());
    }
  });
} else if (role === "read" && script) {
  const term = loadPty().spawn("/bin/sh", ["-c", script], { name: "xterm-256color", cols: 120, rows: 40, cwd: process.cwd(), env: process.env, encoding: null });
  let lastDataAt = Date.now();
  term.onData((data) => {
    lastDataAt = Date.now();
    process.stdout.write(data);
  });
  process.stdin.on("data", (chunk) => term.write(chunk.toString()));
  term.onExit(({ exitCode }) => {
    // node-pty may report the exit before its last read is delivered: wait for quiet.
    const drained = setInterval(() => {
      if (Date.now() - lastDataAt < 50) return;
      clearInterval(drained);
      process.exitCode = exitCode;
      process.stdin.destroy();
    }, 50);
  });
} else {
  process.stderr.write("usage: pty-relay.mjs read SCRIPT | forward\n");
  process.exitCode = 2;
}
