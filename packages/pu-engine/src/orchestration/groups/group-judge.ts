// A group's judge: the file it is given (the task, each finished member's output and its diff,
// cut to a size a model reads whole), its prompt naming where the verdict goes, and its run.
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { loadConfig } from "@pu/core/config";
import { parseJudgeVerdict, variantKeys, type GroupRecord } from "@pu/core/group";
import { firstTurnOf, launchAgent, type LaunchedAgent } from "../../agents/launcher.js";
import { markFinished, retireReplaced, stopAgents } from "../../agents/stop.js";
import { turn } from "../../agents/turn.js";
import { pathWithPuCli } from "../../pu-cli-path.js";
import type { LiveAgent } from "../../session/live-agent.js";
import type { EngineState } from "../../state.js";
import type { LaunchSlots, SlotRequest } from "../launch-slots.js";
import { groupDir, judgeInputFile, verdictFile } from "./group-files.js";

/** How long an agent the group stops gets to exit before it is killed. */
export const STOP_GRACE_MS = 3000;

/** What one member's diff may take in the judge's materials. */
const JUDGE_DIFF_CHARS = 8000;

/** `patchOf`: a member's change as a unified diff ("" when there is none or it cannot be read). */
async function judgeMaterials(group: GroupRecord, done: readonly string[], patchOf: (variant: string) => Promise<string>): Promise<string> {
  const parts = [`# Group ${group.group_id}: the members' work`, "", `Task given to every member:`, "", group.members[done[0] ?? ""]?.prompt ?? "", ""];
  for (const v of done) {
    const member = group.members[v];
    const result = group.individual_outputs?.[v];
    const patch = await patchOf(v);
    parts.push(
      `## Member ${v} (${member?.delegator_name ?? "?"})`,
      "",
      "### Output",
      "",
      result?.output || "(none)",
      "",
      `### Diff${patch.length > JUDGE_DIFF_CHARS ? ` (first ${JUDGE_DIFF_CHARS} characters)` : ""}`,
      "",
      "```diff",
      patch.slice(0, JUDGE_DIFF_CHARS) || "(no changes)",
      "```",
      "",
    );
  }
  return parts.join("\n");
}

function judgePrompt(done: readonly string[], inputFile: string, verdictPath: string): string {
  return [
    `You judge ${done.length} attempts at one task (members ${done.join(", ")}).`,
    `Read ${inputFile}: it holds the task, each member's output and its diff.`,
    `Write your verdict as JSON to ${verdictPath}:`,
    `{"winner": "<member>", "ranking": ["<best>", "..."], "reasons": {"<member>": "<why>"}}`,
    "Change no other file.",
  ].join("\n");
}

/** What the judge's run needs from its group's driver. */
export interface JudgeRunContext {
  state: EngineState;
  slots: LaunchSlots;
  signal: AbortSignal;
  group: GroupRecord;
  /** The daemon stops, or the group was cancelled or ended meanwhile: nothing more is done. */
  over(): boolean;
  /** The judge's place in line while it waits for a slot (cancelling the group takes it out). */
  waiting(request: SlotRequest | undefined): void;
  /** The judge's agent while it runs (cancelling the group stops it). */
  running(live: LiveAgent | undefined): void;
  record(change: (group: GroupRecord) => void): Promise<void>;
  /** A member's change as a unified diff, here or on its host. */
  patchOf(variant: string): Promise<string>;
}

export type JudgeOutcome = { phase: "complete"; aggregated: Record<string, unknown> } | { phase: "failed"; reason: string } | undefined;

/**
 * The judge: an agent given the members' work in one file, asked for a verdict as JSON (asked
 * once more when the first cannot be used). Its outcome ends the group; undefined when the group
 * was over before it.
 */
export async function judgeGroup(ctx: JudgeRunContext, done: string[], outputs: Record<string, string>): Promise<JudgeOutcome> {
  const { group, state } = ctx;
  const root = group.project;
  const id = group.group_id;
  await mkdir(groupDir(root, id), { recursive: true });
  const input = judgeInputFile(root, id);
  const verdictPath = verdictFile(root, id);
  await writeFile(input, await judgeMaterials(group, done, ctx.patchOf));
  await rm(verdictPath, { force: true });
  const request = ctx.slots.request(root, `group:${id}`);
  ctx.waiting(request);
  const onAbort = () => request.cancel();
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  const release = await request.granted;
  ctx.waiting(undefined);
  ctx.signal.removeEventListener("abort", onAbort);
  let judge: LaunchedAgent | undefined;
  try {
    if (ctx.over()) return undefined;
    const config = await loadConfig(root);
    const agentType = group.settings.judge_agent ?? config.defaultAgent;
    judge = await launchAgent(state, {
      projectRoot: root,
      agentType,
      prompt: judgePrompt(done, input, verdictPath),
      placement: { kind: "new", name: `group-${id.replace(/^g-/, "")}-judge`, ...(group.settings.base_branch ? { base: group.settings.base_branch } : {}) },
      env: { PU_GROUP_ID: id, PU_GROUP_ROLE: "judge", PU_OUTPUT_FILE: verdictPath, PU_JUDGE_INPUT: input, PATH: pathWithPuCli() },
    });
    const launched = judge;
    ctx.running(launched.live);
    // A judge that was judging when the daemon stopped was benched with the rest: this one starts over in its place.
    const previous = ((group as Record<string, unknown>).judge as { agent_id?: string } | undefined)?.agent_id;
    if (previous) await retireReplaced(state, root, ({ agent }) => agent.id === previous, launched.agentId, "group");
    await ctx.record((g) => {
      (g as Record<string, unknown>).judge = { agent_id: launched.agentId, worktree_id: launched.worktreeId ?? null, agent_type: agentType };
    });
    let result = await firstTurnOf(state, launched, ctx.signal);
    for (let attempt = 1; ; attempt++) {
      if (ctx.over()) return undefined;
      let problem: string;
      try {
        const verdict = parseJudgeVerdict(await readFile(verdictPath, "utf8"), done, variantKeys(group));
        markFinished(launched.live, "group");
        return { phase: "complete", aggregated: { aggregate: "judge", outputs, winner: verdict.winner, ranking: verdict.ranking, reasons: verdict.reasons } };
      } catch (err) {
        problem = (err as NodeJS.ErrnoException).code === "ENOENT" ? `no verdict was written to ${verdictPath}` : (err as Error).message;
      }
      if (attempt >= 2 || launched.live.session.exitCode !== null || result.outcome !== "waiting") return { phase: "failed", reason: `the judge's verdict is invalid: ${problem}` };
      result = await turn(state, launched.live, `Your verdict cannot be used: ${problem}. Write it again to ${verdictPath} as JSON {"winner", "ranking", "reasons"}.`, { signal: ctx.signal });
    }
  } catch (err) {
    if (ctx.signal.aborted || state.stopping) return undefined;
    return { phase: "failed", reason: `the judge could not run: ${(err as Error).message}` };
  } finally {
    if (judge && judge.live.session.exitCode === null && !state.stopping) await stopAgents([judge.live], "kill", STOP_GRACE_MS).catch(() => undefined);
    ctx.running(undefined);
    release();
  }
}
