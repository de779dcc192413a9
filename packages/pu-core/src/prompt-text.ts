// Prompt text is typed into an agent's terminal, where a control character is a key press:
// \x03 is Ctrl-C, \x1b starts an escape sequence. Text a person hands pu as a prompt may hold
// line breaks and tabs, nothing else of that kind.
import { PuError } from "./errors.js";
import { escapeControlCharacters } from "./names.js";

// C0 controls but tab and newline, DEL, and C1 controls.
const FORBIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const FORBIDDEN_ALL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * The prompt with Windows line ends made plain; INVALID_ARGUMENT naming the first control
 * character and its position otherwise (`pu send --keys` is the way to send control keys).
 */
export function checkPromptText(text: string, what = "prompt"): string {
  const normalized = text.replace(/\r\n/g, "\n");
  const match = FORBIDDEN.exec(normalized);
  if (match) {
    throw new PuError(
      "INVALID_ARGUMENT",
      `${what} contains the control character ${escapeControlCharacters(match[0])} at position ${match.index + 1}; it would act as a key press in the agent's terminal (send keys with \`pu send ID --keys\`)`,
    );
  }
  return normalized;
}

/** Text from elsewhere (a trigger file, a gate's output) with its control characters removed. */
export function stripControlCharacters(text: string): string {
  return text.replace(/\r\n/g, "\n").replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]/g, "").replace(FORBIDDEN_ALL, "");
}

/** The end of a long output (a gate's, a member's), as much as a prompt or a state file should hold. */
export function textTail(text: string, chars: number): string {
  return text.length <= chars ? text : `…${text.slice(text.length - chars)}`;
}
