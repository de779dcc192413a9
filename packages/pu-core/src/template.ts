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
