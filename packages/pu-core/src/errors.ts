// Domain errors: every failure a user can hit carries a stable code, so the daemon can
// ship it over the wire and the CLI can map it to an exit status without string matching.

export const ERROR_CODES = [
  "NOT_INITIALIZED",
  "INVALID_ARGUMENT",
  "AGENT_NOT_FOUND",
  "WORKTREE_NOT_FOUND",
  "NOT_FOUND",
  "SPAWN_FAILED",
  "INVALID_STATE",
  "RESUME_FAILED",
  "MERGE_CONFLICT",
  "CONFIG_ERROR",
  "MANIFEST_INVALID",
  "PROTOCOL_MISMATCH",
  "DAEMON_UNAVAILABLE",
  "TIMEOUT",
  "GIT_ERROR",
  "IO_ERROR",
  "UNTRUSTED",
  "INTERNAL",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Structured facts behind an error (e.g. a merge conflict's files), carried over the wire as they are. */
export type ErrorDetails = Record<string, unknown>;

export class PuError extends Error {
  readonly code: ErrorCode;
  readonly details?: ErrorDetails;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; details?: ErrorDetails }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "PuError";
    this.code = code;
    if (options?.details !== undefined) this.details = options.details;
  }
}

export function isPuError(e: unknown): e is PuError {
  if (e instanceof PuError) return true;
  // A second copy of this module (e.g. a stale dist) would defeat instanceof; the shape is the contract.
  return e instanceof Error && e.name === "PuError" && isErrorCode((e as { code?: unknown }).code);
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && (ERROR_CODES as readonly string[]).includes(value);
}

/**
 * Process exit status for a failure: 2 = the request itself was wrong (as the CLI's own usage
 * errors), 3 = the thing is not there, 4 = the daemon could not be reached or understood.
 */
export function exitCodeFor(code: ErrorCode): 1 | 2 | 3 | 4 {
  switch (code) {
    case "INVALID_ARGUMENT":
      return 2;
    case "NOT_INITIALIZED":
    case "AGENT_NOT_FOUND":
    case "WORKTREE_NOT_FOUND":
    case "NOT_FOUND":
      return 3;
    case "DAEMON_UNAVAILABLE":
    case "PROTOCOL_MISMATCH":
    case "TIMEOUT":
      return 4;
    default:
      return 1;
  }
}
