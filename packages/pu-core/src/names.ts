// User-supplied names: worktree names become git branch slugs; definition names
// become file names, so they must not escape their directory.
import { PuError } from "./errors.js";

export const MAX_WORKTREE_NAME_LENGTH = 64;

/**
 * Lowercases, turns whitespace, `_` and `-` into `-`, drops every other character
 * outside [a-z0-9], collapses runs of `-`, trims `-` from both ends and caps the
 * length at 64. Throws INVALID_ARGUMENT when nothing usable is left.
 */
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
    throw new PuError("INVALID_ARGUMENT", `worktree name '${raw}' has no usable characters`);
  }
  return slug;
}

export function branchForWorktree(name: string): string {
  return `pu/${name}`;
}

/** Returns `name` unchanged if it is safe as a definition file name; throws INVALID_ARGUMENT otherwise. */
export function validateDefinitionName(name: string): string {
  const reject = (why: string): never => {
    throw new PuError("INVALID_ARGUMENT", `definition name '${name}' ${why}`);
  };
  if (name.trim() === "") reject("is empty");
  if (name.includes("\0")) reject("contains a NUL character");
  if (name.includes("/") || name.includes("\\")) reject("must not contain '/' or '\\'");
  if (name.includes("..")) reject("must not contain '..'");
  if (name.startsWith(".")) reject("must not start with '.'");
  return name;
}
