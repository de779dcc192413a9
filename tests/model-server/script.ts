// The test model server's script language: directives written in the user's prompt decide
// what the "model" answers. A prompt typed into a TUI is one line, so directives are found
// anywhere in the text, each running until the next directive keyword:
//
//   THINK: 3000 RUN: touch done.txt SAY: all done
//
// SAY   the answer text (default "done", or "OK" when the prompt holds no directive)
// RUN   one call to the agent's shell tool per RUN, in order; the text answer follows the
//       last tool result
// THINK milliseconds before the first byte of every answer to this prompt
// PACE  milliseconds between streamed chunks (default DEFAULT_PACE_MS)
// NOTE  text the model says before each tool call, in the same answer (Claude Code then
//       records the answer as two lines with one message id; other APIs leave it out)
// USAGE the token usage every answer to this prompt reports, as `in=N out=N cache_read=N
//       cache_write=N reasoning=N` (any subset; `in` is the uncached input); default
//       DEFAULT_USAGE, so records without the directive stay what they were

const DEFAULT_PACE_MS = 10;

/** What one model call reports using: each API spells it its own way from these. */
export interface ScriptedUsage {
  /** Input tokens neither read from nor written to the prompt cache. */
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

const DEFAULT_USAGE: ScriptedUsage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, reasoning: 0 };

const USAGE_KEYS: Record<string, keyof ScriptedUsage> = { in: "input", out: "output", cache_read: "cacheRead", cache_write: "cacheWrite", reasoning: "reasoning" };

function parseUsage(value: string): ScriptedUsage {
  const usage = { ...DEFAULT_USAGE };
  for (const [, key, n] of value.matchAll(/([a-z_]+)=(\d+)/g)) {
    const field = USAGE_KEYS[key!];
    if (field) usage[field] = Number.parseInt(n!, 10);
  }
  return usage;
}

interface Directives {
  say?: string;
  note?: string;
  run: string[];
  thinkMs: number;
  paceMs: number;
  usage: ScriptedUsage;
  /** True when at least one directive was found. */
  scripted: boolean;
}

const KEYWORD = /(?:^|\s)(SAY|RUN|THINK|PACE|USAGE|NOTE):\s?/g;

function parseDirectives(text: string): Directives {
  const found: Directives = { run: [], thinkMs: 0, paceMs: DEFAULT_PACE_MS, usage: DEFAULT_USAGE, scripted: false };
  const marks = [...text.matchAll(KEYWORD)];
  marks.forEach((mark, i) => {
    const start = (mark.index ?? 0) + mark[0].length;
    const end = i + 1 < marks.length ? (marks[i + 1]?.index ?? text.length) : text.length;
    // A directive ends at its line's end too, so text the CLI wraps around the prompt stays out.
    const value = text.slice(start, end).split("\n")[0]!.trim();
    found.scripted = true;
    switch (mark[1]) {
      case "SAY":
        found.say = value;
        break;
      case "RUN":
        if (value !== "") found.run.push(value);
        break;
      case "THINK":
        found.thinkMs = toMs(value, found.thinkMs);
        break;
      case "PACE":
        found.paceMs = toMs(value, found.paceMs);
        break;
      case "NOTE":
        found.note = value;
        break;
      case "USAGE":
        found.usage = parseUsage(value);
        break;
    }
  });
  return found;
}

function toMs(value: string, fallback: number): number {
  const ms = Number.parseInt(value, 10);
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, 600_000) : fallback;
}

/** What each API's request reduces to: the conversation's shape and the tools on offer. */
export interface ConversationView {
  /** Text of each user message, oldest first, with how many tool results followed it. */
  userTurns: { text: string; toolResultsAfter: number }[];
  tools: ToolOffer[];
  /** All system / instruction text, for recognising side requests (titles). */
  systemText: string;
}

/** A tool as offered, with the JSON schema of its arguments when it has one. */
interface ToolOffer {
  name: string;
  /** `function` for JSON-argument tools; others (local_shell, custom, server tools) keep their own type. */
  type: string;
  parameters?: JsonSchema;
}

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  [key: string]: unknown;
}

export type Reply =
  | { kind: "text"; text: string; thinkMs: number; paceMs: number; usage: ScriptedUsage }
  | { kind: "tool_call"; tool: ToolOffer; command: string; arguments: Record<string, unknown>; thinkMs: number; paceMs: number; usage: ScriptedUsage; note?: string }
  | { kind: "title"; text: string; usage: ScriptedUsage };

/** Names a shell tool goes by, best first; anything else matching /shell|bash|exec/ comes after. */
const SHELL_TOOL_NAMES = ["Bash", "bash", "shell_command", "shell", "exec_command", "local_shell"];

function pickShellTool(tools: ToolOffer[]): ToolOffer | undefined {
  for (const name of SHELL_TOOL_NAMES) {
    const tool = tools.find((t) => t.name === name && (t.type === "function" || t.type === "local_shell"));
    if (tool) return tool;
  }
  return tools.find((t) => t.type === "function" && /shell|bash|exec/i.test(t.name) && commandProperty(t.parameters) !== undefined);
}

function commandProperty(schema: JsonSchema | undefined): string | undefined {
  const props = schema?.properties ?? {};
  return ["command", "cmd"].find((key) => key in props);
}

function isType(schema: JsonSchema | undefined, type: string): boolean {
  return schema?.type === type || (Array.isArray(schema?.type) && schema.type.includes(type));
}

/**
 * Arguments for one shell command, shaped by the tool's own schema: a string `command`/`cmd`
 * gets the command line, an array one gets `["bash", "-lc", line]`; other required string
 * fields (OpenCode's `description`) get a short label.
 */
function shellArguments(tool: ToolOffer, command: string): Record<string, unknown> {
  if (tool.type === "local_shell") return { command: ["bash", "-lc", command] };
  const key = commandProperty(tool.parameters) ?? "command";
  const schema = tool.parameters?.properties?.[key];
  const args: Record<string, unknown> = { [key]: isType(schema, "array") ? ["bash", "-lc", command] : command };
  for (const name of tool.parameters?.required ?? []) {
    if (name in args) continue;
    const field = tool.parameters?.properties?.[name];
    if (isType(field, "string")) args[name] = "Scripted command from the test model server";
    else if (isType(field, "boolean")) args[name] = false;
  }
  return args;
}

/**
 * The answer to a request. A request without tools is a side request (Claude's and OpenCode's
 * session titles, Codex's title thread): it gets a title at once, as JSON when the request
 * asks for JSON. Otherwise the newest user message holding directives is the script, and the
 * number of tool results since then says which step of it is due.
 */
export function planReply(view: ConversationView): Reply {
  const last = view.userTurns.at(-1);
  if (view.tools.length === 0) {
    const wantsJson = /json/i.test(view.systemText) || /json/i.test(last?.text ?? "");
    return { kind: "title", text: wantsJson ? JSON.stringify({ title: "Scripted test task" }) : "Scripted test task", usage: DEFAULT_USAGE };
  }
  const scriptedAt = view.userTurns.findLastIndex((turn) => parseDirectives(turn.text).scripted);
  const later = view.userTurns.slice(scriptedAt + 1);
  // CLIs add their own user messages (Codex's `<environment_context>`); a later message that is
  // a person's prompt without directives gets a plain answer instead of replaying an old script.
  if (scriptedAt < 0 || later.some((turn) => !isContextMessage(turn.text))) {
    return { kind: "text", text: "OK", thinkMs: 0, paceMs: DEFAULT_PACE_MS, usage: DEFAULT_USAGE };
  }
  const directives = parseDirectives(view.userTurns[scriptedAt]!.text);
  const { thinkMs, paceMs, usage } = directives;
  const step = view.userTurns.slice(scriptedAt).reduce((sum, turn) => sum + turn.toolResultsAfter, 0);
  const command = directives.run[step];
  const tool = pickShellTool(view.tools);
  if (command !== undefined && tool) {
    const call: Reply = { kind: "tool_call", tool, command, arguments: shellArguments(tool, command), thinkMs, paceMs, usage };
    if (directives.note) call.note = directives.note;
    return call;
  }
  if (command !== undefined) {
    const offered = view.tools.map((t) => t.name).join(", ");
    return { kind: "text", text: `The test model server found no shell tool among: ${offered}`, thinkMs, paceMs, usage };
  }
  return { kind: "text", text: directives.say ?? "done", thinkMs, paceMs, usage };
}

/** A message a CLI writes itself: wrapped in one XML-like tag (`<environment_context>…`). */
function isContextMessage(text: string): boolean {
  return /^\s*<[A-Za-z_-]+[\s>]/.test(text) && /<\/[A-Za-z_-]+>\s*$/.test(text);
}

/** Splits answer text into streamed chunks of a word or so, keeping every character. */
export function chunkText(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [text];
}
