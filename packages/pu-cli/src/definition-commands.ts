// What `pu trigger|prompt|agent|swarm|schedule list|show|create|delete` share. Each
// command file is a small subclass naming its kind; the daemon does the reading,
// validating and writing, so the CLI never touches definition files itself.
import { homedir } from "node:os";
import path from "node:path";
import type { DefinitionGetResult, DefinitionKind, DefinitionSummary } from "@pu/ipc/protocol";
import { isPuError, PuError } from "@pu/core/errors";
import { DEFINITION_KIND_TABLE, findProjectRoot, puHome } from "@pu/core/paths";
import { escapeControlCharacters, validateDefinitionName } from "@pu/core/names";
import { Option } from "./clipanion.js";
import { parseVars } from "./commands/spawn.js";
import { withDaemon } from "./daemon-client.js";
import { PuCommand } from "./pu-command.js";
import { readFileOption } from "./read-file-option.js";
import { CliUsageError } from "./usage-error.js";

/** How one kind of definition appears on the command line. */
export interface DefinitionNoun {
  kind: DefinitionKind;
  /** The CLI noun: `pu <noun> list`. */
  noun: (typeof DEFINITION_KIND_TABLE)[DefinitionKind]["noun"];
  /** Plural for messages ("prompt templates"). */
  plural: string;
  /** Directory under `.pu/` and `$PU_HOME`. */
  dir: string;
  /** File extension, for the examples and messages. */
  ext: ".md" | ".yaml";
}

function nounOf<K extends DefinitionKind>(kind: K) {
  return { kind, ...DEFINITION_KIND_TABLE[kind] };
}

/** The CLI's nouns, from pu-core's definition-kind table. */
export const NOUNS = {
  trigger: nounOf("trigger"),
  prompt: nounOf("template"),
  agent: nounOf("agent"),
  swarm: nounOf("swarm"),
  schedule: nounOf("schedule"),
} satisfies Record<string, DefinitionNoun>;

/** A definition name from the command line; a bad one is a usage error before any request. */
export function checkedName(noun: DefinitionNoun, name: string): string {
  try {
    return validateDefinitionName(name);
  } catch (error) {
    throw new CliUsageError(`invalid ${noun.noun} name: ${(error as Error).message.replace(/^definition name /, "")}`);
  }
}

/** `--var K=V` pairs (repeatable) as a record, as spawn reads them; undefined when none were given. */
export function parseVarPairs(pairs: readonly string[]): Record<string, string> | undefined {
  return pairs.length === 0 ? undefined : parseVars(pairs);
}

/** The daemon's "not found" names the files it looked for; say where they would have been too. */
export function withLookedIn(noun: DefinitionNoun, name: string, error: unknown, scope?: "local" | "global"): unknown {
  if (!isPuError(error) || error.code !== "NOT_FOUND") return error;
  const home = puHome(process.env);
  const shownHome = home.startsWith(`${homedir()}/`) ? `~/${path.relative(homedir(), home)}` : home;
  const local = `.pu/${noun.dir}`;
  const global = `${shownHome}/${noun.dir}`;
  const looked = scope === "local" ? local : scope === "global" ? global : `${local} and ${global}`;
  return new PuError("NOT_FOUND", `no ${noun.noun} named ${name} (looked in ${looked}); see \`pu ${noun.noun} list\``, { cause: error });
}

abstract class DefinitionCommand extends PuCommand {
  abstract readonly noun: DefinitionNoun;

  /**
   * The project when there is one: definitions work without a project (global only), so
   * only an explicit `--project` / `$PU_PROJECT_ROOT` that is not a project is an error.
   */
  optionalProjectRoot(): string | undefined {
    if (this.project !== undefined || process.env.PU_PROJECT_ROOT) return this.projectRoot();
    return findProjectRoot(process.cwd());
  }

  withProject<T extends object>(fields: T, root: string | undefined): T & { projectRoot?: string } {
    return root === undefined ? { ...fields } : { ...fields, projectRoot: root };
  }
}

export abstract class DefinitionListCommand extends DefinitionCommand {
  async run(): Promise<number> {
    const root = this.optionalProjectRoot();
    const result = await withDaemon((client) =>
      client.request("definition_list", this.withProject({ kind: this.noun.kind }, root)),
    );
    for (const d of result.definitions) for (const warning of d.warnings ?? []) this.report.note(`pu: warning: ${warning}`);
    return this.report.result(result, (out) => {
      if (result.definitions.length === 0) {
        out.line(`no ${this.noun.plural} (add one with \`pu ${this.noun.noun} create NAME --file PATH\`)`);
        return;
      }
      for (const line of this.tableLines(result.definitions)) out.line(line);
    });
  }

  /** NAME, SCOPE, then the description (or why the file is unusable). */
  tableLines(definitions: DefinitionSummary[]): string[] {
    return columnLines(
      ["NAME", "SCOPE", "DESCRIPTION"],
      definitions.map((d) => [d.name, d.scope, d.error !== undefined ? `invalid: ${d.error}` : (d.description ?? "")]),
    );
  }
}

export abstract class DefinitionShowCommand extends DefinitionCommand {
  name = Option.String({ name: "NAME" });

  async run(): Promise<number> {
    const name = checkedName(this.noun, this.name);
    const root = this.optionalProjectRoot();
    let result: DefinitionGetResult;
    try {
      result = await withDaemon((client) => client.request("definition_get", this.withProject({ kind: this.noun.kind, name }, root)));
    } catch (error) {
      throw withLookedIn(this.noun, name, error);
    }
    for (const warning of result.warnings) this.report.note(`pu: warning: ${warning}`);
    return this.report.result(result, (out) => {
      out.line(`# ${result.path} (${result.scope})`);
      out.write(result.content.endsWith("\n") ? result.content : `${result.content}\n`);
      const summary = this.summarize(result.parsed);
      if (summary.length > 0) {
        out.line();
        for (const line of summary) out.line(line);
      }
    });
  }

  /** Lines printed under the file's text; what a reader would otherwise work out from it. */
  abstract summarize(parsed: unknown): string[];
}

export abstract class DefinitionCreateCommand extends DefinitionCommand {
  name = Option.String({ name: "NAME" });
  source = Option.String({ required: false, name: "-" });
  file = Option.String("--file", { description: "Read the definition from this file" });
  global = Option.Boolean("--global", false, { description: "Save under $PU_HOME (every project) instead of .pu/" });
  force = Option.Boolean("--force", false, { description: "Replace an existing definition of that name" });

  /** Text given on the command line itself (prompts' `--body`); undefined for other kinds. */
  inlineText(): string | undefined {
    return undefined;
  }

  readContent(): string {
    if (this.source !== undefined && this.source !== "-") {
      throw new CliUsageError(`unexpected argument "${this.source}" (use \`-\` to read from stdin, or --file PATH)`);
    }
    const inline = this.inlineText();
    const given = [this.file !== undefined && "--file", this.source === "-" && "-", inline !== undefined && "--body"].filter(Boolean);
    if (given.length !== 1) {
      const ways = this.noun.kind === "template" ? "--file PATH, --body TEXT or `-` (stdin)" : "--file PATH or `-` (stdin)";
      throw new CliUsageError(given.length === 0 ? `say where the ${this.noun.noun} comes from: ${ways}` : `${given.join(" and ")} cannot be used together`);
    }
    if (inline !== undefined) return inline;
    return readFileOption(this.file ?? "-");
  }

  async run(): Promise<number> {
    const name = checkedName(this.noun, this.name);
    const content = this.readContent();
    const root = this.global ? this.optionalProjectRoot() : this.projectRoot();
    const fields = { kind: this.noun.kind, name, content, scope: this.global ? ("global" as const) : ("local" as const), overwrite: this.force };
    let result;
    try {
      result = await withDaemon((client) => client.request("definition_save", this.withProject(fields, root)));
    } catch (error) {
      // The daemon refuses to replace a file unless asked; tell the user how to ask.
      if (!this.force && isPuError(error) && error.code === "INVALID_ARGUMENT" && / already exists\b/.test(error.message)) {
        throw new PuError("INVALID_ARGUMENT", `${error.message.replace(/ \(delete it first.*\)$/, "")}; pass --force to replace it`, { cause: error });
      }
      throw error;
    }
    for (const warning of result.warnings) this.report.note(`pu: warning: ${warning}`);
    return this.report.result(result, (out) => {
      out.line(`saved ${this.noun.noun} ${name} (${result.scope}) to ${displayPath(result.path, root)}`);
    });
  }
}

export abstract class DefinitionDeleteCommand extends DefinitionCommand {
  name = Option.String({ name: "NAME" });
  global = Option.Boolean("--global", false, { description: "Delete the copy under $PU_HOME, not the project's" });

  async run(): Promise<number> {
    const name = checkedName(this.noun, this.name);
    const root = this.global ? this.optionalProjectRoot() : this.projectRoot();
    const fields = { kind: this.noun.kind, name, scope: this.global ? ("global" as const) : ("local" as const) };
    let result;
    try {
      result = await withDaemon((client) => client.request("definition_delete", this.withProject(fields, root)));
    } catch (error) {
      throw withLookedIn(this.noun, name, error, fields.scope);
    }
    return this.report.result(result, (out) => {
      out.line(`deleted ${this.noun.noun} ${name} (${displayPath(result.path, root)})`);
    });
  }
}

/** Local files relative to the project root, global ones as they are. */
function displayPath(file: string, root: string | undefined): string {
  if (root === undefined) return file;
  const rel = path.relative(root, file);
  return rel.startsWith("..") || path.isAbsolute(rel) ? file : rel;
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function columnLines(header: string[], rows: string[][]): string[] {
  const all = [header, ...rows.map((row) => row.map(escapeControlCharacters))];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
  return all.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd(),
  );
}

/** A one-line preview of free text. */
export function oneLine(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
