import { ALL_COMMAND_PATHS, loadCommands, matchCommandGroup, matchCommandPath } from "./command-table.js";
import { cliVersion } from "./version.js";

const VERSION_FLAGS = new Set(["--version", "-v", "-V"]);

/** Runs `pu` with `argv` (without node and the script) and returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  // Answered before clipanion is even loaded: the cheapest possible round trip.
  if (argv.length === 1 && VERSION_FLAGS.has(argv[0]!)) {
    process.stdout.write(`pu ${cliVersion()}\n`);
    return 0;
  }
  const input = argv.length === 0 ? ["--help"] : [...argv];
  const matched = matchCommandPath(input);
  const wantsHelp = input.includes("--help") || input.includes("-h");
  const daemonClient =
    matched !== undefined && !wantsHelp && !MANAGES_DAEMON_ITSELF.has(matched)
      ? import("./daemon-client.js").then((m) => (m.prewarmConnection(), m))
      : undefined;
  // One turn of the event loop before clipanion and the command load: the socket connects and
  // sends its hello in it, so the daemon answers while this process is busy loading (the hello
  // round trip was otherwise waited out after loading, before the command's own request).
  if (daemonClient !== undefined) await daemonClient.then(() => new Promise((resolve) => setImmediate(resolve)));
  try {
    return await run(input, matched);
  } finally {
    await (await daemonClient)?.releasePrewarmed();
  }
}

// These decide for themselves whether and how to connect.
const MANAGES_DAEMON_ITSELF = new Set(["daemon start", "daemon stop", "daemon restart", "daemon status", "completion"]);

// Registered with every other command, whose definitions it reads (`this.cli.definitions()`).
const SEES_EVERY_COMMAND = new Set(["completion"]);

async function run(argv: readonly string[], matched: string | undefined): Promise<number> {
  let input = [...argv];
  const group = matched === undefined ? matchCommandGroup(input) : undefined;
  const paths =
    matched !== undefined
      ? SEES_EVERY_COMMAND.has(matched)
        ? ALL_COMMAND_PATHS
        : [matched]
      : group !== undefined
        ? ALL_COMMAND_PATHS.filter((p) => p.startsWith(`${group} `))
        : ALL_COMMAND_PATHS;
  // Everything else loads in parallel, and only what this command needs.
  const [{ Cli, Builtins }, commandClasses, { colorEnabled }, { Report }, { CliUsageError }] = await Promise.all([
    import("./clipanion.js"),
    loadCommands(paths),
    import("./output.js"),
    import("./report.js"),
    import("./usage-error.js"),
  ]);
  // Usage errors come before any command runs, so they get a report of their own.
  const usageError = (message: string) => new Report(input.includes("--json")).error(new CliUsageError(message));

  const cli = new Cli({
    binaryLabel: "pu — workspaces for AI coding agents",
    binaryName: "pu",
    // Shown only by the top-level help and `pu --version`; a command's own run skips reading it.
    binaryVersion: matched === undefined ? cliVersion() : undefined,
    enableColors: colorEnabled(process.stdout),
    enableCapture: false,
  });
  for (const commandClass of commandClasses) cli.register(commandClass);
  if (group !== undefined) {
    // `pu daemon --help` lists the group; `pu daemon` or `pu daemon frob` is a usage error.
    if (input[1] === "--help" || input[1] === "-h") {
      process.stdout.write(cli.usage(null, { colored: colorEnabled(process.stdout) }));
      return 0;
    }
    const verbs = paths.map((p) => p.slice(group.length + 1)).join(", ");
    const what = input[1] === undefined ? "needs a subcommand" : `has no subcommand "${input[1]}"`;
    return usageError(`pu ${group} ${what} (one of: ${verbs}); run \`pu ${group} --help\``);
  }
  if (matched === undefined) {
    cli.register(Builtins.HelpCommand);
    cli.register(Builtins.VersionCommand);
  }

  // Clipanion folds `--` into its positionals; commands that pass arguments through
  // (`spawn … -- --model opus`) get everything after the first `--` untouched instead.
  let passThrough: string[] | undefined;
  const dashDash = input.indexOf("--");
  if (dashDash >= 0 && matched !== undefined && (commandClasses[paths.indexOf(matched)] as { acceptsPassThrough?: boolean }).acceptsPassThrough) {
    passThrough = input.slice(dashDash + 1);
    input = input.slice(0, dashDash);
  }

  let command;
  try {
    command = cli.process(input);
    if (passThrough !== undefined) (command as unknown as { passThrough: string[] }).passThrough = passThrough;
  } catch (error) {
    return usageError(usageMessage(error, input, matched, () => missingRequiredOptions(cli.definitions(), matched, input)));
  }
  return cli.run(command);
}

/** Clipanion's parse errors are multi-line blocks; pu reports one line and where to look. */
function usageMessage(error: unknown, input: readonly string[], matched: string | undefined, missingOptions: () => string[]): string {
  const hint = matched === undefined ? "run `pu --help`" : `run \`pu ${matched} --help\``;
  if (matched === undefined && input[0] !== undefined && !input[0].startsWith("-")) {
    return `unknown command "${input[0]}"; ${hint}`;
  }
  const firstLine = (error instanceof Error ? error.message : String(error)).split("\n")[0]!.trim();
  if (!/^Command not found/.test(firstLine)) return `${firstLine.replace(/\.$/, "")}; ${hint}`;
  // Clipanion says only "not found" when a required option is absent: name it.
  const missing = missingOptions();
  if (missing.length > 0) return `pu ${matched} needs ${missing.join(" and ")}; ${hint}`;
  return `invalid arguments: ${input.join(" ")}; ${hint}`;
}

/** The required options of the command at `matched` that `input` does not give (by their long name). */
function missingRequiredOptions(definitions: { path: string; options: { definition: string; required: boolean }[] }[], matched: string | undefined, input: readonly string[]): string[] {
  const definition = definitions.find((d) => d.path === `pu ${matched}`);
  if (!definition) return [];
  return definition.options
    .filter((option) => option.required)
    .map((option) => (option.definition.split(" ")[0] ?? "").split(","))
    .filter((names) => !names.some((name) => input.some((arg) => arg === name || arg.startsWith(`${name}=`))))
    .map((names) => names[names.length - 1] ?? "");
}
