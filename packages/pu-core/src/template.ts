// Prompt templates: markdown with optional YAML frontmatter and {{VAR}} placeholders.
//
// Placeholder syntax, deliberately small:
//   {{NAME}} or {{ NAME }}   NAME = letter or _ followed by letters, digits, _
//   \{{                      a literal "{{" (the backslash is dropped, nothing is substituted)
// Anything else between braces ("{{ not a var }}", "{single}") is plain text.
// A placeholder without a value is left in the output untouched and reported
// in `missing`, so the caller decides whether that is an error.
import { parseDocument } from "yaml";
import { z } from "zod";
import { PuError } from "./errors.js";

export const TemplateFrontmatterSchema = z.object({
  name: z.string().min(1).optional(),
  description: z.string().optional(),
  agent: z.string().min(1).optional(),
  command: z.string().min(1).optional(),
});
export type TemplateFrontmatter = z.infer<typeof TemplateFrontmatterSchema>;

export interface ParsedTemplate {
  frontmatter: TemplateFrontmatter;
  body: string;
  /** Placeholder names in the body, each once, in order of first use. */
  variables: string[];
  /** Non-fatal findings such as unknown frontmatter keys. */
  warnings: string[];
}

export interface RenderedTemplate {
  text: string;
  /** Placeholders with no value, each once, in order of first use. */
  missing: string[];
}

// Group 1: the escape backslash; group 2: the variable name.
const PLACEHOLDER = /(\\)?\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\\\{\{/g;

export function templateVariables(body: string): string[] {
  const names = new Set<string>();
  for (const match of body.matchAll(PLACEHOLDER)) {
    const [, escaped, name] = match;
    if (!escaped && name) names.add(name);
  }
  return [...names];
}

export function renderTemplate(text: string, vars: Readonly<Record<string, string>>): RenderedTemplate {
  const missing = new Set<string>();
  const rendered = text.replace(PLACEHOLDER, (whole, escaped: string | undefined, name: string | undefined) => {
    if (escaped || name === undefined) return whole.slice(1); // drop the escaping backslash
    if (Object.hasOwn(vars, name)) return vars[name] ?? "";
    missing.add(name);
    return whole;
  });
  return { text: rendered, missing: [...missing] };
}

export interface RenderedShellCommand {
  /** The command text, each placeholder turned into a reference to its environment variable. */
  command: string;
  /** `PU_VAR_<NAME>` for every variable given (referenced or not). */
  env: Record<string, string>;
  missing: string[];
}

/** The environment variable a gate command reads a template variable from. */
export function gateVariableName(name: string): string {
  return `PU_VAR_${name}`;
}

/**
 * Renders a command that a shell will run without ever splicing a value into its text: each
 * `{{NAME}}` becomes `${PU_VAR_NAME}`, double-quoted where it stands outside quotes and
 * closed-then-reopened inside single quotes, so the shell expands it as one word and never
 * parses it (a value of `x; rm -rf ~` stays the argument `x; rm -rf ~`).
 */
export function renderShellCommand(text: string, vars: Readonly<Record<string, string>>): RenderedShellCommand {
  const missing = new Set<string>();
  let quote: "'" | '"' | null = null;
  let scanned = 0;
  // Quote state of the shell text up to `end` (exclusive), continuing from the last call.
  const advance = (end: number) => {
    for (; scanned < end; scanned++) {
      const c = text[scanned];
      if (quote === "'") {
        if (c === "'") quote = null;
      } else if (c === "\\") {
        scanned++;
      } else if (quote === '"') {
        if (c === '"') quote = null;
      } else if (c === "'" || c === '"') {
        quote = c;
      }
    }
  };
  const command = text.replace(PLACEHOLDER, (whole: string, escaped: string | undefined, name: string | undefined, offset: number) => {
    advance(offset);
    scanned = offset + whole.length;
    if (escaped || name === undefined) return whole.slice(1);
    if (!Object.hasOwn(vars, name)) {
      missing.add(name);
      return whole;
    }
    const reference = `\${${gateVariableName(name)}}`;
    if (quote === '"') return reference;
    if (quote === "'") return `'"${reference}"'`;
    return `"${reference}"`;
  });
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(vars)) env[gateVariableName(name)] = value;
  return { command, env, missing: [...missing] };
}

/**
 * Splits `---` frontmatter off a markdown file. The opening fence must be the
 * very first line; the closing fence is the next line that is exactly `---`
 * (or `...`). Without an opening fence the whole file is the body.
 */
export function splitFrontmatter(content: string, path: string): { yaml: string | undefined; body: string } {
  const text = content.startsWith("\uFEFF") ? content.slice(1) : content;
  const open = /^---[ \t]*\r?\n/.exec(text);
  if (!open) return { yaml: undefined, body: text };
  const rest = text.slice(open[0].length);
  const close = /^(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/m.exec(rest);
  if (!close) {
    throw new PuError("CONFIG_ERROR", `${path}: frontmatter opened with "---" is never closed`);
  }
  return { yaml: rest.slice(0, close.index), body: rest.slice(close.index + close[0].length) };
}

export function parseTemplate(content: string, path: string): ParsedTemplate {
  const { yaml, body } = splitFrontmatter(content, path);
  const warnings: string[] = [];
  let frontmatter: TemplateFrontmatter = {};
  if (yaml !== undefined && yaml.trim() !== "") {
    const doc = parseDocument(yaml, { prettyErrors: false });
    const [yamlError] = doc.errors;
    if (yamlError) {
      throw new PuError("CONFIG_ERROR", `${path}: frontmatter is not valid YAML: ${yamlError.message}`);
    }
    const raw: unknown = doc.toJS();
    if (raw !== null && raw !== undefined) {
      if (typeof raw !== "object" || Array.isArray(raw)) {
        throw new PuError("CONFIG_ERROR", `${path}: frontmatter must be a YAML mapping`);
      }
      const result = TemplateFrontmatterSchema.safeParse(raw);
      if (!result.success) {
        const detail = result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
        throw new PuError("CONFIG_ERROR", `${path}: ${detail}`);
      }
      frontmatter = result.data;
      for (const key of Object.keys(raw)) {
        if (!(key in TemplateFrontmatterSchema.shape)) warnings.push(`${path}: unknown key "${key}" ignored`);
      }
    }
  }
  return { frontmatter, body, variables: templateVariables(body), warnings };
}

/** Quotes a word for a shell: it reads back as the same single argument (also used to show an argv as a command line). */
export function shellQuote(word: string): string {
  if (word !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
