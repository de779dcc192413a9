import { createRequire } from "node:module";

// clipanion ships CommonJS. Loading it with require() rather than an ESM `import` skips Node's
// CJS export-name scan (cjs-module-lexer over every re-exported file), a visible share of
// start-up time. Types still come from the package itself.
const clipanion = createRequire(import.meta.url)("clipanion") as typeof import("clipanion");

export const { Command, Option, Cli, Builtins } = clipanion;
export type { CommandClass } from "clipanion";
