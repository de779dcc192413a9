// Reading a JSON state file against its zod schema: one error naming the file and every bad
// field (`evidence_log[0].type: is required`), with the error code the caller chooses.
import type { z } from "zod";
import { PuError, type ErrorCode } from "./errors.js";

/** Parses `text` as JSON and validates it; `extraProblems` adds checks the schema cannot express. */
export function parseJsonText<T extends z.ZodType>(
  schema: T,
  text: string,
  filePath: string,
  code: ErrorCode,
  extraProblems: (raw: unknown) => string[] = () => [],
): z.output<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    const detail = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ");
    throw new PuError(code, `${filePath}: not valid JSON (${detail})`, { cause: error });
  }
  return parseJsonValue(schema, raw, filePath, code, extraProblems(raw));
}

export function parseJsonValue<T extends z.ZodType>(
  schema: T,
  raw: unknown,
  filePath: string,
  code: ErrorCode,
  extraProblems: string[] = [],
): z.output<T> {
  const result = schema.safeParse(raw);
  const problems = [...extraProblems, ...(result.success ? [] : [describeIssues(result.error)])];
  if (problems.length > 0) {
    throw new PuError(code, `${filePath}: ${problems.join("; ")}`, { cause: result.success ? undefined : result.error });
  }
  return result.data as z.output<T>;
}

/** Every issue as `field.path: message`, joined by "; ". */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const message =
        issue.code === "invalid_type" && issue.message.endsWith("received undefined") ? "is required" : issue.message;
      const field = fieldPath(issue.path);
      return field ? `${field}: ${message}` : message;
    })
    .join("; ");
}

/** `["evidence_log", 0, "type"]` → `evidence_log[0].type` */
function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((part, i) => (typeof part === "number" ? `[${part}]` : `${i === 0 ? "" : "."}${String(part)}`)).join("");
}
