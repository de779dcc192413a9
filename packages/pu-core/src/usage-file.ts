// `.pu/usage.json`: the tokens each agent of the project used, kept after the agent, its
// worktree and the daemon are gone. Written only by the daemon (locked, atomic). Each agent's
// figures are kept per record source (a Claude session file, a Codex rollout, an OpenCode
// session): a source is re-read from its start after a restart and its tally replaced, so a
// count is never added twice, and a source that disappeared keeps its last tally.
import path from "node:path";
import { z } from "zod";
import { parseJsonText } from "./json-state.js";
import { puDir } from "./paths.js";

const Count = z.number().min(0).default(0);
const TallyEntrySchema = z.object({ input: Count, cacheRead: Count, cacheWrite: Count, output: Count, reasoning: Count, calls: Count });
/** `day|model` → tokens and calls. */
const TallySchema = z.record(z.string(), TallyEntrySchema);

const IsoTime = z.string().min(1);

export const UsageOwnerSchema = z.object({
  kind: z.enum(["ticket", "group", "plan"]),
  id: z.string().min(1),
});
export type UsageOwner = z.infer<typeof UsageOwnerSchema>;

export const AgentBudgetSchema = z.object({
  maxTokens: z.number().int().positive().optional(),
  maxCost: z.number().positive().optional(),
  /** When pu stopped the agent's turn for being over it; cleared when the budget is raised. */
  exceededAt: IsoTime.optional(),
});
export type AgentBudget = z.infer<typeof AgentBudgetSchema>;

const AgentUsageSchema = z.looseObject({
  name: z.string(),
  agentType: z.string(),
  startedAt: IsoTime,
  owner: UsageOwnerSchema.optional(),
  /** Record source → its tally. Empty while none was found: the usage is unknown, not 0. */
  sources: z.record(z.string(), TallySchema).default({}),
  budget: AgentBudgetSchema.optional(),
  /**
   * Set while pu follows the agent's records as they grow; cleared once it exited and they were
   * read to the end. Still set when a daemon starts: that daemon died mid-read, and the new one
   * reads those records again (settles them).
   */
  reading: z.boolean().optional(),
});
export type AgentUsage = z.infer<typeof AgentUsageSchema>;

export const USAGE_FILE_VERSION = 1;

const UsageFileSchema = z.looseObject({
  version: z.literal(USAGE_FILE_VERSION, { error: (issue) => `unsupported usage file version ${JSON.stringify(issue.input)} (this pu reads version ${USAGE_FILE_VERSION})` }),
  agents: z.record(z.string(), AgentUsageSchema).default({}),
});
export type UsageFile = z.infer<typeof UsageFileSchema>;

export function usageFilePath(root: string): string {
  return path.join(puDir(root), "usage.json");
}

export function parseUsageFile(text: string, filePath: string): UsageFile {
  return parseJsonText(UsageFileSchema, text, filePath, "CONFIG_ERROR");
}

export function emptyUsageFile(): UsageFile {
  return { version: USAGE_FILE_VERSION, agents: {} };
}
