// The dashboard's own process (ES modules): Ink and React are ES-module-only, and the CLI's
// bundle runs as one CommonJS script, so `pu dash` starts this file with its options as JSON
// and reads what to do next (attach to an agent) from the file named in argv[3].
import { writeFileSync } from "node:fs";
import { runDashboard, type DashOptions } from "./app.js";

const options = JSON.parse(process.argv[2] ?? "{}") as DashOptions;
const handOffFile = process.argv[3];
runDashboard(options).then(
  ({ code, handOff }) => {
    if (handOff && handOffFile) writeFileSync(handOffFile, JSON.stringify(handOff));
    process.exit(code);
  },
  (error: unknown) => {
    process.stdout.write("\x1b[?1049l\x1b[?25h");
    process.stderr.write(`pu: the dashboard failed: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
