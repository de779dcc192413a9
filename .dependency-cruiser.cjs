// Import rules `pnpm lint` enforces (scripts/lint-imports.mjs runs this). The engine's
// floors (docs/ARCHITECTURE.md): each floor imports only the floors below it; handlers
// never import handlers, services never import handlers, and no package has an import
// cycle.

// A workspace import resolves to the other package's dist/ (its exports map);
// unbuilt, it stays the bare "@pu/..." name. Each pattern matches both.
const pkg = (name) => `(^|/)packages/pu-${name}/|^@pu/${name}($|/)`;

const ENGINE = "^packages/pu-engine/src/";

/**
 * pu-engine's floors, lowest first: a module may import its own floor and the ones below,
 * never one above. docs/ARCHITECTURE.md draws the same list.
 */
const ENGINE_FLOORS = [
  ["base", ["daemon-log\\.ts$", "process-info\\.ts$", "projects\\.ts$", "pu-cli-path\\.ts$", "trust-store\\.ts$", "launch-seals\\.ts$", "stray-agents\\.ts$"]],
  ["session", ["session/"]],
  ["git", ["git/"]],
  ["state", ["state\\.ts$", "engine-events\\.ts$", "status-watch\\.ts$"]],
  ["agents", ["agents/"]],
  ["worktrees-gates-automation-hosts-usage", ["worktrees/", "gates/", "automation/", "hosts/", "usage/"]],
  ["orchestration", ["orchestration/"]],
  ["services", ["services\\.ts$", "recovery\\.ts$", "daemon-service\\.ts$"]],
  ["handlers", ["handlers/", "handlers\\.ts$"]],
  ["daemon", ["daemon\\.ts$"]],
];
const floorPaths = (floor) => floor[1].map((p) => ENGINE + p);

/** One rule per floor: nothing on it imports a floor above it. */
const floorRules = ENGINE_FLOORS.slice(0, -1).map((floor, i) => ({
  name: `engine-floor-${floor[0]}`,
  severity: "error",
  comment: `The engine reads top down: ${floor[0]} imports only its own floor and the ones below it (${ENGINE_FLOORS.slice(0, i).map((f) => f[0]).join(", ") || "pu-core and pu-ipc"}).`,
  from: { path: floorPaths(floor) },
  to: { path: ENGINE_FLOORS.slice(i + 1).flatMap(floorPaths) },
}));

/** Every engine source file sits on a floor: a new top-level file or folder must be placed. */
const unplacedRule = {
  name: "engine-file-without-floor",
  severity: "error",
  comment: "Add the new file or folder to ENGINE_FLOORS in .dependency-cruiser.cjs (and docs/ARCHITECTURE.md).",
  from: { path: ENGINE, pathNot: ENGINE_FLOORS.flatMap(floorPaths) },
  to: {},
};

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...floorRules,
    unplacedRule,
    {
      name: "no-cycle",
      severity: "error",
      comment: "An import cycle makes load order matter and hides which module owns what.",
      from: {},
      to: { circular: true },
    },
    {
      name: "handler-imports-handler",
      severity: "error",
      comment:
        "A handler parses a request, calls a service and shapes the reply; logic two handlers share belongs in a service.",
      from: { path: "^packages/pu-engine/src/handlers/([^/]+)$" },
      to: { path: "^packages/pu-engine/src/handlers/", pathNot: "^packages/pu-engine/src/handlers/$1$" },
    },
    {
      name: "service-imports-handler",
      severity: "error",
      comment:
        "Only the dispatch table (src/handlers.ts) reaches handlers; a service that needs a handler's logic needs that logic moved into a service.",
      from: { path: "^packages/pu-engine/src/", pathNot: "^packages/pu-engine/src/(handlers/|handlers\\.ts$)" },
      to: { path: "^packages/pu-engine/src/handlers/" },
    },
    {
      name: "pu-core-imports-pu",
      severity: "error",
      comment: "DESIGN.md: pu-core imports nothing of pu.",
      from: { path: "^packages/pu-core/src/" },
      to: { path: [pkg("ipc"), pkg("engine"), pkg("cli")] },
    },
    {
      name: "pu-ipc-imports-beyond-core",
      severity: "error",
      comment: "DESIGN.md: pu-ipc imports only pu-core.",
      from: { path: "^packages/pu-ipc/src/" },
      to: { path: [pkg("engine"), pkg("cli")] },
    },
    {
      name: "pu-engine-imports-cli",
      severity: "error",
      comment: "DESIGN.md: pu-engine imports pu-core and pu-ipc only.",
      from: { path: "^packages/pu-engine/src/" },
      to: { path: pkg("cli") },
    },
    {
      name: "pu-cli-imports-engine",
      severity: "error",
      comment: "DESIGN.md: pu-cli never imports pu-engine's code; it starts the daemon as a process.",
      from: { path: "^packages/pu-cli/src/" },
      to: { path: pkg("engine") },
    },
    {
      name: "pu-web-imports-beyond-ipc",
      severity: "error",
      comment: "pu web is a daemon client like the CLI: it imports pu-core and pu-ipc only.",
      from: { path: "^packages/pu-web/src/" },
      to: { path: [pkg("engine"), pkg("cli")] },
    },
    {
      name: "page-imports-server-code",
      severity: "error",
      comment: "The page runs in a browser: no server module of pu-web and no IPC client or server (type-only imports and pu-core's pure modules are fine).",
      from: { path: "^packages/pu-web/src/page/" },
      to: { path: ["^packages/pu-web/src/[^/]+$", "^packages/pu-ipc/src/(client|server)"], dependencyTypesNot: ["type-only"] },
    },
    {
      name: "page-imports-node-builtins",
      severity: "error",
      comment: "The page runs in a browser: no Node built-in.",
      from: { path: "^packages/pu-web/src/page/" },
      to: { dependencyTypes: ["core"] },
    },
  ],
  options: {
    // Type-only imports count: they tie the packages together just the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    doNotFollow: { path: ["node_modules", "/dist/"] },
    exclude: { path: ["/test/"] },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["types", "import", "default"],
    },
  },
};
