// User-supplied names: worktree names become git branch slugs; definition names
// become file names, so they must not escape their directory.
import { PuError } from "./errors.js";

export const MAX_WORKTREE_NAME_LENGTH = 64;

/**
 * Lowercases, turns whitespace, `_` and `-` into `-`, drops every other character
 * outside [a-z0-9], collapses runs of `-`, trims `-` from both ends and caps the
 * length at 64. Throws INVALID_ARGUMENT when nothing usable is left.
 */
// C0 controls, DEL and C1 controls: a terminal acts on them instead of showing them.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/g;

/** Text safe to print on a terminal: each control character shown as `\xNN`. */
export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** "contains the control character \x1b at position 4", or undefined for a clean name. */
function controlCharacterProblem(name: string): string | undefined {
  const match = CONTROL_CHARACTER.exec(name);
  if (!match) return undefined;
  return `contains the control character ${escapeControlCharacters(match[0])} at position ${match.index + 1}`;
}

/** INVALID_ARGUMENT naming the first control character in a name given as text. */
export function refuseControlCharacters(what: string, raw: string): string {
  const control = controlCharacterProblem(raw);
  if (control) throw new PuError("INVALID_ARGUMENT", `${what} '${escapeControlCharacters(raw)}' ${control}; names are printable text`);
  return raw;
}

/** Agent names are free text, but one line of printable characters, short enough for a status table. */
export function validateAgentName(raw: string): string {
  const name = refuseControlCharacters("agent name", raw).trim();
  if (name === "" || name.length > 64) {
    throw new PuError("INVALID_ARGUMENT", `agent name must be 1 to 64 characters, got '${raw}'`);
  }
  return name;
}

export function normalizeWorktreeName(raw: string): string {
  const slug = raw
    .toLowerCase()
    .replace(/[\s_-]+/g, "-")
    .replace(/[^a-z0-9-]/g, "")
    .replace(/-+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MAX_WORKTREE_NAME_LENGTH)
    .replace(/-+$/, "");
  if (slug === "") {
    throw new PuError("INVALID_ARGUMENT", `worktree name '${escapeControlCharacters(raw)}' has no usable characters`);
  }
  return slug;
}

export function branchForWorktree(name: string): string {
  return `pu/${name}`;
}

/** Returns `name` unchanged if it is safe as a definition file name; throws INVALID_ARGUMENT otherwise. */
export function validateDefinitionName(name: string): string {
  const reject = (why: string): never => {
    throw new PuError("INVALID_ARGUMENT", `definition name '${escapeControlCharacters(name)}' ${why}`);
  };
  if (name.trim() === "") reject("is empty");
  const control = controlCharacterProblem(name);
  if (control) reject(control);
  if (name.includes("/") || name.includes("\\")) reject("must not contain '/' or '\\'");
  if (name.includes("..")) reject("must not contain '..'");
  if (name.startsWith(".")) reject("must not start with '.'");
  return name;
}

/** The first few words of a prompt make a readable worktree name (undefined when none is left). */
export function nameFromPrompt(prompt: string): string | undefined {
  const words = prompt.trim().split(/\s+/).slice(0, 5).join(" ");
  try {
    return normalizeWorktreeName(words).slice(0, 40).replace(/-+$/, "") || undefined;
  } catch {
    return undefined;
  }
}
