import type { Definition } from "./clipanion.js";

/**
 * What the shell should offer for the word under the cursor. `words` candidates come with a
 * one-line description (zsh shows it, bash drops it); `files` and `dirs` hand the word to the
 * shell's own path completion.
 */
export type Completion = { kind: "words"; candidates: Candidate[] } | { kind: "files" } | { kind: "dirs" };

export interface Candidate {
  value: string;
  description: string;
}

/** Ids the daemon knows, looked up only when the cursor is on an agent or worktree argument. */
export type IdKind = "agents" | "worktrees";
export type IdLookup = (kind: IdKind, projectFlag: string | undefined) => Promise<Candidate[]>;

interface OptionSpec {
  names: string[];
  takesValue: boolean;
  description: string;
}

interface CommandSpec {
  /** Without the binary name: ["trigger", "list"]. */
  path: string[];
  description: string;
  options: OptionSpec[];
  /** Positional argument names in order, as clipanion's usage line shows them (ID, WT, NAME...). */
  positionals: string[];
}

const GLOBAL_FLAGS: Candidate[] = [
  { value: "--help", description: "Show help" },
  { value: "--version", description: "Print pu's version" },
];
const HELP_FLAG: Candidate = { value: "--help", description: "Show this command's help" };

/** Clipanion's definitions (`cli.definitions()`) in the shape completion needs. */
export function commandSpecs(definitions: readonly Definition[]): CommandSpec[] {
  return definitions.map((definition) => {
    const path = definition.path.split(" ").slice(1);
    // The usage line is the path followed by the positionals: `pu send <ID> [TEXT]`.
    const positionals = definition.usage
      .split(" ")
      .slice(path.length + 1)
      .map((token) => /^[<[]([^>\]]+)[>\]]$/.exec(token)?.[1])
      .filter((name): name is string => name !== undefined && !name.startsWith("-"));
    const options = definition.options.map((option) => {
      const [names = "", ...rest] = option.definition.split(" ");
      return { names: names.split(","), takesValue: rest.length > 0, description: firstLine(option.description) };
    });
    return { path, description: firstLine(definition.description), options, positionals };
  });
}

function firstLine(text: string | undefined): string {
  return (text ?? "").trim().split("\n")[0]!.trim();
}

/** Positional names whose values are ids the daemon can list. */
const POSITIONAL_IDS: Readonly<Record<string, IdKind>> = { ID: "agents", AGENT: "agents", WT: "worktrees" };

/** The value an option takes, where pu can offer something better than nothing. */
function optionValueKind(command: CommandSpec, option: string): IdKind | "files" | "dirs" | undefined {
  switch (option) {
    case "--project":
      return "dirs";
    case "--file":
      return "files";
    case "--worktree":
      return "worktrees";
    case "--agent":
      // `spawn --agent` takes an agent type (its description says so); `status`/`kill --agent` an id.
      return /\btype\b/i.test(command.options.find((o) => o.names.includes(option))?.description ?? "") ? undefined : "agents";
    default:
      return undefined;
  }
}

/**
 * Completes the last of `words` (the command line after `pu`, up to and including the word
 * under the cursor, which may be empty).
 */
export async function complete(specs: readonly CommandSpec[], words: readonly string[], lookup: IdLookup): Promise<Completion> {
  const before = words.slice(0, -1);
  const current = words.at(-1) ?? "";
  const command = matchCommand(specs, before);
  if (command === undefined) return { kind: "words", candidates: filter(commandWords(specs, before, current), current) };

  const rest = before.slice(command.path.length);
  // After `--` everything belongs to the agent's command line (`spawn ... -- --model opus`).
  if (rest.includes("--")) return { kind: "words", candidates: [] };
  const projectFlag = projectFlagIn(rest);
  const previous = rest.at(-1);
  const pendingOption = previous === undefined ? undefined : command.options.find((o) => o.takesValue && o.names.includes(previous));
  if (pendingOption !== undefined) {
    const kind = optionValueKind(command, previous!);
    if (kind === "files" || kind === "dirs") return { kind };
    return { kind: "words", candidates: kind === undefined ? [] : filter(await lookup(kind, projectFlag), current) };
  }
  if (current.startsWith("-")) {
    const options = command.options.flatMap((o) => o.names.filter((n) => n.startsWith("--")).map((value) => ({ value, description: o.description })));
    return { kind: "words", candidates: filter([...options, HELP_FLAG], current) };
  }
  const positional = command.positionals[positionalIndex(command, rest)];
  const kind = positional === undefined ? undefined : POSITIONAL_IDS[positional];
  return { kind: "words", candidates: kind === undefined ? [] : filter(await lookup(kind, projectFlag), current) };
}

/** The command `words` spell out, the longest path first (`trigger list` over a lone `trigger`). */
function matchCommand(specs: readonly CommandSpec[], words: readonly string[]): CommandSpec | undefined {
  let best: CommandSpec | undefined;
  for (const spec of specs) {
    if (spec.path.length > words.length || !spec.path.every((part, i) => words[i] === part)) continue;
    if (best === undefined || spec.path.length > best.path.length) best = spec;
  }
  return best;
}

/** Command names (first word) or a group's verbs (second word). */
function commandWords(specs: readonly CommandSpec[], before: readonly string[], current: string): Candidate[] {
  if (before.length === 0) {
    const seen = new Map<string, Candidate>();
    for (const spec of specs) {
      const [word] = spec.path;
      if (word === undefined || seen.has(word)) continue;
      const group = spec.path.length > 1;
      seen.set(word, { value: word, description: group ? `${word} commands` : spec.description });
    }
    return [...seen.values(), ...(current.startsWith("-") ? GLOBAL_FLAGS : [])];
  }
  if (before.length === 1) {
    return specs.filter((s) => s.path.length === 2 && s.path[0] === before[0]).map((s) => ({ value: s.path[1]!, description: s.description }));
  }
  return [];
}

/** How many positionals precede the cursor (option words and their values do not count). */
function positionalIndex(command: CommandSpec, rest: readonly string[]): number {
  let index = 0;
  for (let i = 0; i < rest.length; i++) {
    const word = rest[i]!;
    if (word.startsWith("-")) {
      const option = command.options.find((o) => o.names.includes(word));
      if (option?.takesValue) i++;
      continue;
    }
    index++;
  }
  return index;
}

function projectFlagIn(rest: readonly string[]): string | undefined {
  for (let i = rest.length - 1; i >= 0; i--) {
    const word = rest[i]!;
    if (word === "--project") return rest[i + 1];
    if (word.startsWith("--project=")) return word.slice("--project=".length);
  }
  return undefined;
}

function filter(candidates: readonly Candidate[], prefix: string): Candidate[] {
  return candidates.filter((c) => c.value.startsWith(prefix));
}
