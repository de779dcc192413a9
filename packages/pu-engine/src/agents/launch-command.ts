/**
 * How an agent's process is started: program, argv, environment, and how its
 * initial prompt reaches it. A prompt is only ever an argv element or bytes
 * typed into the PTY; it is never spliced into a shell command line.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { agentTypeDescriptor, SESSION_ID_PLACEHOLDER } from "@pu/core/agent-types";
import type { AgentTypeConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { stripControlCharacters } from "@pu/core/prompt-text";
import { shellQuote } from "@pu/core/template";

export interface LaunchOptions {
  prompt?: string;
  /** Session id (UUID): required to start claude, and to resume any type whose resumeArgs use {sessionId}. */
  sessionId?: string;
  extraArgs?: string[];
  /** An arbitrary command line (`pu spawn --command CMD`), replacing the type's command. */
  command?: string;
  planMode?: boolean;
  /** Let the agent act without asking for each permission, where its type has such arguments. */
  unattended?: boolean;
  resume?: boolean;
  /** Shell for the terminal type; defaults to $SHELL, else /bin/sh. */
  shell?: string;
}

export interface Launch {
  file: string;
  args: string[];
  /** Text to type into the PTY once the program is ready (see deliverPrompt). */
  promptToType?: string;
  /** Human-readable command line for the manifest's `command` field (typed prompts excluded). */
  commandLine: string;
}

/**
 * Shell syntax: quotes, expansions, operators, globs, `~`, escapes, comments,
 * newlines, or a leading `VAR=value` assignment. Without any of these, splitting
 * on whitespace gives the same argv the shell would.
 */
export function hasShellSyntax(command: string): boolean {
  return /["'`$|&;<>()*?[\]~\\#\n\r{}!]/.test(command) || /^\s*[A-Za-z_][A-Za-z0-9_]*=/.test(command);
}

/** Program and arguments for a command line: via `/bin/sh -c` only when it needs a shell. */
function commandArgv(command: string, extraArgs: string[] = []): { file: string; args: string[] } {
  if (hasShellSyntax(command)) {
    // Extra arguments become "$@" so they are passed through as words, never re-parsed.
    const script = extraArgs.length > 0 ? `${command} "$@"` : command;
    return { file: "/bin/sh", args: ["-c", script, ...(extraArgs.length > 0 ? ["sh", ...extraArgs] : [])] };
  }
  const [file, ...args] = command.trim().split(/\s+/);
  if (!file) throw new PuError("INVALID_ARGUMENT", "empty command");
  return { file, args: [...args, ...extraArgs] };
}

export function buildLaunch(type: AgentTypeConfig & { name: string }, opts: LaunchOptions = {}): Launch {
  const extraArgs = opts.extraArgs ?? [];
  const prompt = opts.prompt ? opts.prompt : undefined;

  if (opts.command !== undefined) {
    const { file, args } = commandArgv(opts.command, extraArgs);
    return finish(file, args, prompt, opts.command);
  }

  const command = type.name === "terminal" && opts.shell ? opts.shell : type.command;
  const descriptor = agentTypeDescriptor(type.name);
  const modeArgs = [...(opts.planMode ? (descriptor?.planModeArgs ?? []) : []), ...(opts.unattended ? (descriptor?.unattendedArgs ?? []) : [])];
  const withSessionId = (args: readonly string[], action: "start" | "resume") =>
    args.map((arg) => (arg.includes(SESSION_ID_PLACEHOLDER) ? arg.replaceAll(SESSION_ID_PLACEHOLDER, requireSessionId(opts.sessionId, action)) : arg));

  if (opts.resume) {
    const resumeArgs = type.resumeArgs ?? descriptor?.resumeArgs;
    // A type with no way to resume (a terminal, say) simply starts afresh, without the old prompt.
    const args = withSessionId(resumeArgs ?? [], "resume");
    return fromConfiguredCommand(command, [...args, ...type.launchArgs, ...modeArgs, ...extraArgs]);
  }

  const sessionArgs = withSessionId(descriptor?.sessionIdArgs ?? [], "start");
  const args = [...sessionArgs, ...type.launchArgs, ...modeArgs, ...extraArgs];
  if (prompt === undefined) return fromConfiguredCommand(command, args);
  if (type.promptFlag) return fromConfiguredCommand(command, [...args, type.promptFlag, promptAsArgument(prompt)]);
  if (!type.interactive) return fromConfiguredCommand(command, [...args, promptAsArgument(prompt)]);
  return fromConfiguredCommand(command, args, prompt);
}

/**
 * A prompt given as an argument, never read as an option: a prompt starting with `-` (from a
 * ticket, a page, a template) would otherwise reach the program as one of its own flags —
 * Codex's `-c key=value` can make it run a program. A leading space keeps the words as they
 * are for the model and is read as a value by every argument parser; `--` would not do,
 * since a prompt flag's value comes after it and not every program ends its options there.
 */
function promptAsArgument(prompt: string): string {
  return prompt.startsWith("-") ? ` ${prompt}` : prompt;
}

/** A configured `command` may itself be a small command line (`npx foo`, or with shell syntax). */
function fromConfiguredCommand(command: string, args: string[], promptToType?: string): Launch {
  const argv = commandArgv(command, args);
  return finish(argv.file, argv.args, promptToType);
}

function finish(file: string, args: string[], promptToType: string | undefined, commandLine?: string): Launch {
  const launch: Launch = { file, args, commandLine: commandLine ?? [file, ...args].map(shellQuote).join(" ") };
  if (promptToType !== undefined) launch.promptToType = promptToType;
  return launch;
}

function requireSessionId(sessionId: string | undefined, action: "start" | "resume"): string {
  if (!sessionId) {
    throw new PuError(action === "resume" ? "RESUME_FAILED" : "INVALID_ARGUMENT", `cannot ${action} the agent: no session id`);
  }
  return sessionId;
}


export interface LaunchEnvOptions {
  agentId: string;
  projectRoot: string;
  worktreeId?: string;
  /** The caller's own variables (`pu spawn --env`); pu's PU_* identity variables still win. */
  extra?: Record<string, string>;
}

export function buildEnv(base: NodeJS.ProcessEnv, opts: LaunchEnvOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) {
    if (value !== undefined) env[key] = value;
  }
  // Claude refuses to start inside another Claude session when this is set.
  delete env.CLAUDECODE;
  Object.assign(env, opts.extra);
  env.TERM = "xterm-256color";
  env.COLORTERM = "truecolor";
  env.PU_AGENT_ID = opts.agentId;
  env.PU_PROJECT_ROOT = opts.projectRoot;
  if (opts.worktreeId) env.PU_WORKTREE_ID = opts.worktreeId;
  else delete env.PU_WORKTREE_ID;
  return env;
}

/** What deliverPrompt needs from a session (AgentSession satisfies it). */
export interface PromptTarget {
  readonly exitCode: number | null;
  readonly exited: Promise<number>;
  readonly ring: { readonly endOffset: number };
  onOutput(cb: (chunk: Buffer, offset: number) => void): () => void;
  write(data: Buffer | string): void;
  /** The program turned on bracketed paste: the text goes in as one paste. */
  readonly bracketedPaste?: boolean;
}

export interface TypingOptions {
  chunkBytes?: number;
  /** Pause between chunks, so TUIs see typing rather than one burst. */
  keystrokeGapMs?: number;
  /** Pause before the Enter (the agent type's submitPauseMs). */
  submitPauseMs?: number;
  /** Press Enter after the text (default true). */
  submit?: boolean;
}

export interface DeliverPromptOptions extends TypingOptions {
  /** Type once output has been quiet this long after the program printed something. */
  quietMs?: number;
  /** Type after this long if the program printed nothing at all. */
  noOutputMs?: number;
  /** Type anyway after this long, even if output never settles (e.g. an animation). */
  timeoutMs?: number;
}

/**
 * Types `text` into the agent once it looks ready (see typeText). Resolves true when
 * written, false when the agent exited first.
 */
export async function deliverPrompt(
  session: PromptTarget,
  text: string,
  { quietMs = 450, noOutputMs = 1800, timeoutMs = 15000, ...typing }: DeliverPromptOptions = {},
): Promise<boolean> {
  let exited = session.exitCode !== null;
  void session.exited.then(() => {
    exited = true;
  });
  const startedAt = Date.now();
  let sawOutput = session.ring.endOffset > 0;
  let lastOutputAt = startedAt;
  const unsubscribe = session.onOutput(() => {
    sawOutput = true;
    lastOutputAt = Date.now();
  });
  try {
    for (;;) {
      if (exited) return false;
      const now = Date.now();
      const readyAt = sawOutput ? lastOutputAt + quietMs : startedAt + noOutputMs;
      if (now >= readyAt || now - startedAt >= timeoutMs) break;
      await sleep(Math.min(readyAt - now, 50));
    }
  } finally {
    unsubscribe();
  }
  return typeText(session, text, typing);
}

/**
 * Types `text` now, then presses Enter as its own key after a pause. Control characters never
 * reach the agent as key presses: they are stripped here (requests refuse them earlier; this
 * covers trigger files and gate output). Where the program enabled bracketed paste the text
 * goes in as one paste, so a newline in it does not submit. Resolves false when the agent
 * exited before everything was written.
 */
export async function typeText(
  session: PromptTarget,
  text: string,
  { chunkBytes = 64, keystrokeGapMs = 10, submitPauseMs = 50, submit = true }: TypingOptions = {},
): Promise<boolean> {
  let exited = session.exitCode !== null;
  void session.exited.then(() => {
    exited = true;
  });
  const clean = stripControlCharacters(text);
  const paste = session.bracketedPaste === true;
  if (paste && clean) session.write(PASTE_START);
  for (const chunk of utf8Chunks(clean, chunkBytes)) {
    if (exited) return false;
    session.write(chunk);
    await sleep(keystrokeGapMs);
  }
  if (paste && clean) session.write(PASTE_END);
  if (!submit) return !exited;
  await sleep(submitPauseMs);
  if (exited) return false;
  session.write("\r");
  return true;
}

/** Splits text into pieces of at most `maxBytes` UTF-8 bytes without cutting a character. */
function* utf8Chunks(text: string, maxBytes: number): Generator<Buffer> {
  let piece = "";
  let pieceBytes = 0;
  for (const char of text) {
    const bytes = Buffer.byteLength(char);
    if (pieceBytes + bytes > maxBytes && piece) {
      yield Buffer.from(piece);
      piece = "";
      pieceBytes = 0;
    }
    piece += char;
    pieceBytes += bytes;
  }
  if (piece) yield Buffer.from(piece);
}

const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
