// Values that pu puts on an agent's command line as the value of one of its own flags (a
// ticket's or step's model after `--model`). A value that starts with `-` would be read by
// the agent CLI as a flag of its own (`--model --permission-mode=bypassPermissions`), so
// such a value is refused wherever pu reads one, and again where it becomes an argument.
import { PuError } from "./errors.js";

export const FLAG_LIKE_MESSAGE = 'must not start with "-" (the agent CLI would read it as a flag)';

export function isFlagLike(value: string): boolean {
  return value.startsWith("-");
}

/** Throws INVALID_ARGUMENT naming `what` when `value` would be read as a flag. */
export function checkArgvValue(what: string, value: string): string {
  if (isFlagLike(value)) throw new PuError("INVALID_ARGUMENT", `${what} "${value}" ${FLAG_LIKE_MESSAGE}`);
  return value;
}

/** `--model VALUE` for an agent CLI; INVALID_ARGUMENT when the value would be read as a flag. */
export function modelArgs(model: string): string[] {
  return ["--model", checkArgvValue("model", model)];
}
