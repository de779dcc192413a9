/**
 * Multi-agent groups (`multi_agent_groups` in state.json): created by `pu group run` or by a
 * workflow's group step, driven by a GroupDriver each, compared, diffed and picked. The queue's
 * state store is the one writer of state.json; its LaunchSlots give members their slots.
 */
import type { GroupBudgets } from "./group-driver.js";
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { loadConfig } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { LOCAL_PLACE } from "@pu/core/hosts-file";
import { parsePlaces } from "@pu/core/placement";
import {
  aggregatedText,
  GroupRecordSchema,
  isGroupFinished,
  memberState,
  parseDelegator,
  planGroupMembers,
  variantKeys,
  type AggregateMode,
  type GroupKind,
  type GroupRecord,
  type GroupSettings,
  type JoinMode,
} from "@pu/core/group";
import type { PendingSubAgent } from "@pu/core/operator-state";
import { agentTypeTrustItem } from "@pu/core/trust";
import type { CleanResult, GroupMemberView, GroupView, GroupsResults } from "@pu/ipc/protocol";
import { agentTypeOrThrow, requireAgentProgram } from "../../agents/launcher.js";
import { cleanWorktrees } from "../../worktrees/clean-worktrees.js";
import { diffWorktree } from "../../git/diff.js";
import { mergeRecordedWorktree } from "../../worktrees/merge-recorded.js";
import { requireBaseRef } from "../../git/worktree.js";
import { currentBranch } from "../../git/runner.js";
import { nowIso, type EngineState } from "../../state.js";
import type { LaunchSlots } from "../launch-slots.js";
import type { WorkOwner } from "../../agents/owners.js";
import type { OperatorStateStore } from "../queue/state-store.js";
import { GroupDriver } from "./group-driver.js";
import type { HostMembers } from "../../hosts/host-members.js";
import { groupDir } from "./group-files.js";

export interface GroupRunSpec {
  root: string;
  kind: GroupKind;
  delegators: string[];
  sharedPrompt: string;
  prompts: string[];
  aggregate?: AggregateMode;
  join?: JoinMode;
  quorum?: number;
  gate?: { run: string; expect_exit?: number; timeout_seconds?: number };
  maxRetries?: number;
  timeoutMinutes?: number;
  judge?: string;
  base?: string;
  /** Members share this worktree (a read-only workflow step). */
  sharedWorktree?: string;
  /** The group's budget over all its members. */
  maxCost?: number;
  maxTokens?: number;
  ticketId?: string;
  stepName?: string;
  /** Where members run: `local` and hosts' names (absent: here only). */
  on?: string[];
  /** On a host: this group is one member of a control plane's group (`delegators` its one, `sharedPrompt` its whole prompt). */
  placedMember?: { groupId: string; variant: string; env?: Record<string, string>; worktree?: string };
}

export class GroupService {
  private readonly drivers = new Map<string, GroupDriver>();

  constructor(
    private readonly state: EngineState,
    private readonly store: OperatorStateStore,
    private readonly slots: LaunchSlots,
    /** A group's budget is counted over its members' usage. */
    private readonly budgets: GroupBudgets,
    /** Members placed on hosts (`--on`). */
    private readonly hostMembers?: HostMembers,
  ) {}

  /** Groups state.json holds that pu can drive (one another tool wrote is listed as unreadable, never touched). */
  /** The group's members placed on hosts that have an agent there (their usage counts toward the group's budget). */
  hostAgents(root: string, groupId: string): { host: string; agentId: string }[] {
    const group = this.records().groups.find((g) => g.project === root && g.group_id === groupId);
    return Object.values(group?.members ?? {}).flatMap((m) => (m?.host && m.agent_id ? [{ host: m.host, agentId: m.agent_id }] : []));
  }

  private records(): { groups: GroupRecord[]; unreadable: string[] } {
    const groups: GroupRecord[] = [];
    const unreadable: string[] = [];
    for (const raw of this.store.state.multi_agent_groups ?? []) {
      const parsed = GroupRecordSchema.safeParse(raw);
      if (parsed.success) groups.push(raw as GroupRecord);
      else unreadable.push(`${raw.group_id}: ${parsed.error.issues[0]?.path.join(".") ?? ""} ${parsed.error.issues[0]?.message ?? "invalid"}`.trim());
    }
    return { groups, unreadable };
  }

  /** Picks up every group not finished: after a restart (or SIGKILL) nothing is lost. */
  start(): void {
    if (this.store.error) return;
    const { groups, unreadable } = this.records();
    for (const line of unreadable) this.state.log.event("group_unreadable", { problem: line });
    for (const group of groups) {
      if (isGroupFinished(group) || this.drivers.has(group.group_id)) continue;
      this.state.log.event("group_continued", { projectRoot: group.project, groupId: group.group_id, phase: group.phase });
      this.drive(group);
    }
  }

  stop(): void {
    for (const driver of this.drivers.values()) driver.stop();
    this.drivers.clear();
  }

  private drive(group: GroupRecord): GroupDriver {
    const driver = new GroupDriver({ state: this.state, store: this.store, slots: this.slots, budgets: this.budgets, ...(this.hostMembers ? { hostMembers: this.hostMembers } : {}) }, group);
    this.drivers.set(group.group_id, driver);
    void driver.ended.then(() => {
      if (this.drivers.get(group.group_id) === driver) this.drivers.delete(group.group_id);
    });
    driver.run();
    return driver;
  }

  /** Checks everything a group needs before any member is lined up, then records and starts it. */
  async create(spec: GroupRunSpec): Promise<GroupRecord> {
    this.store.ensureUsable();
    const root = spec.root;
    const placedBy = spec.placedMember;
    if (placedBy) {
      // Asked again (the control plane restarted before it recorded the answer): the same group, never a second.
      const made = this.records().groups.find((g) => g.project === root && g.settings.placed_by?.group_id === placedBy.groupId && g.settings.placed_by.variant === placedBy.variant);
      if (made) return made;
    }
    const pending = placedBy ? placedMemberLaunch(spec, placedBy.variant) : planGroupMembers({ kind: spec.kind, delegators: spec.delegators, sharedPrompt: spec.sharedPrompt, prompts: spec.prompts });
    const places = spec.on ? parsePlaces(spec.on, "--on") : null;
    if (places && spec.sharedWorktree) throw new PuError("INVALID_ARGUMENT", "members that share one worktree run where it is; --on places members in worktrees of their own");
    for (const place of places ?? []) if (place !== LOCAL_PLACE) await this.requireHost(place);
    const config = await loadConfig(root);
    // Types checked here: the members that may run here and the judge (always here); a host checks its own.
    const memberTypes = !places || places.includes(LOCAL_PLACE) ? spec.delegators.map((d) => parseDelegator(d).agentType) : [];
    const types = [...new Set([...memberTypes, ...(spec.aggregate === "judge" ? [spec.judge ?? config.defaultAgent] : [])])];
    for (const type of types) {
      await this.state.trust.require(root, [agentTypeTrustItem(root, type, agentTypeOrThrow(config, type))]);
    }
    // Refused now, not by every member failing later: a program that is not installed, a base that does not exist.
    for (const type of types) requireAgentProgram(config, type, root);
    if (spec.base !== undefined && !spec.sharedWorktree) await requireBaseRef(root, spec.base);
    if (spec.aggregate === "gate" && !spec.gate) throw new PuError("INVALID_ARGUMENT", "aggregate gate needs a gate (--gate CMD) to run in every member's worktree");
    if (spec.quorum !== undefined && spec.quorum > pending.length) {
      throw new PuError("INVALID_ARGUMENT", `the quorum ${spec.quorum} is more than the group's ${pending.length} members`);
    }
    const base = spec.sharedWorktree ? null : (spec.base ?? (await currentBranch(root)));
    if (!spec.sharedWorktree && !base) throw new PuError("INVALID_ARGUMENT", `${root} is on a detached HEAD; pass --base BRANCH for the members' worktrees`);
    const settings: GroupSettings = {
      aggregate: spec.aggregate ?? "collect",
      join: spec.join ?? "all",
      quorum: spec.quorum ?? 1,
      gate: spec.gate ? { run: spec.gate.run, expect_exit: spec.gate.expect_exit ?? 0, timeout_seconds: spec.gate.timeout_seconds ?? 600 } : null,
      max_retries: spec.maxRetries ?? 0,
      timeout_minutes: spec.timeoutMinutes ?? null,
      judge_agent: spec.aggregate === "judge" ? (spec.judge ?? config.defaultAgent) : null,
      shared_worktree: spec.sharedWorktree ?? null,
      base_branch: base,
      ...(spec.maxCost !== undefined ? { max_cost: spec.maxCost } : {}),
      ...(spec.maxTokens !== undefined ? { max_tokens: spec.maxTokens } : {}),
      ...(places ? { hosts: places } : {}),
      ...(placedBy ? { placed_by: { group_id: placedBy.groupId, variant: placedBy.variant, ...(placedBy.env ? { env: placedBy.env } : {}) } } : {}),
    };
    const group: GroupRecord = {
      group_id: `g-${randomBytes(3).toString("hex")}`,
      ticket_id: spec.ticketId ?? "",
      step_name: spec.stepName ?? (placedBy ? `member ${placedBy.variant} of ${placedBy.groupId}` : ""),
      step_type: spec.kind,
      agent_ids: [],
      phase: "launching",
      individual_outputs: {},
      aggregated_output: null,
      expected_total: pending.length,
      pending_launches: pending,
      agent_variant_keys: {},
      project: root,
      created_at: nowIso(),
      finished_at: null,
      settings,
      members: Object.fromEntries(pending.map((p) => [p.variant_key, { delegator_name: p.delegator_name, prompt: p.prompt, attempts: 0 }])),
    };
    // Members write their outputs here (PU_OUTPUT_FILE); it exists before the first one starts.
    await mkdir(groupDir(root, group.group_id), { recursive: true });
    await this.store.update((s) => {
      s.multi_agent_groups = [...(s.multi_agent_groups ?? []), group];
    });
    this.state.log.event("group_created", { projectRoot: root, groupId: group.group_id, kind: spec.kind, members: pending.length });
    this.state.events.emit("group_changed", { projectRoot: root, groupId: group.group_id, phase: group.phase, kind: "created" });
    this.drive(group);
    return group;
  }

  private async requireHost(name: string): Promise<void> {
    if (!this.hostMembers) throw new PuError("INVALID_STATE", `this daemon places no members on hosts (--on ${name})`);
    await this.hostMembers.requireHost(name);
  }

  find(root: string, groupId: string): GroupRecord {
    this.store.ensureUsable();
    const group = this.records().groups.find((g) => g.group_id === groupId && g.project === root);
    if (!group) throw new PuError("NOT_FOUND", `no group ${groupId} in ${root} (pu group list shows the groups)`);
    return group;
  }

  list(root: string): GroupsResults["group_list"] {
    this.store.ensureUsable();
    const { groups, unreadable } = this.records();
    return { groups: groups.filter((g) => g.project === root).map((g) => groupView(g)), unreadable };
  }

  /** The worktrees and agents of the project's groups not finished (members and judge), for `pu clean` and `pu kill`. */
  ownedWork(root: string): WorkOwner[] {
    if (this.store.error) return [];
    return this.records()
      .groups.filter((g) => g.project === root && !isGroupFinished(g))
      .map((g) => {
        const judge = (g as Record<string, unknown>).judge as { agent_id?: string | null; worktree_id?: string | null } | undefined;
        const members = Object.values(g.members);
        const ids = (values: unknown[]) => [...new Set(values.filter((v): v is string => typeof v === "string" && v !== ""))];
        return {
          kind: "group",
          id: g.group_id,
          agentIds: ids([...g.agent_ids, ...members.map((m) => m.agent_id), judge?.agent_id]),
          worktreeIds: ids([...members.map((m) => m.worktree_id), judge?.worktree_id, g.settings.shared_worktree]),
        };
      });
  }

  /** The group a workflow step started (not finished), so a restarted ticket waits for it instead of starting another. */
  openGroupOfStep(root: string, ticketId: string, stepName: string): GroupRecord | undefined {
    return this.records().groups.find((g) => g.project === root && g.ticket_id === ticketId && g.step_name === stepName && !isGroupFinished(g));
  }

  /** Settles when the group has ended (complete, failed or cancelled). */
  async ended(group: GroupRecord): Promise<GroupRecord> {
    if (isGroupFinished(group)) return group;
    const driver = this.drivers.get(group.group_id) ?? this.drive(group);
    return driver.ended;
  }

  async cancel(root: string, groupId: string): Promise<GroupRecord> {
    const group = this.find(root, groupId);
    if (isGroupFinished(group)) throw new PuError("INVALID_STATE", `group ${groupId} is already ${group.phase}`);
    const driver = this.drivers.get(groupId) ?? this.drive(group);
    await driver.cancel();
    return group;
  }

  async diff(root: string, groupId: string, variant: string, stat: boolean): Promise<GroupsResults["group_diff"]> {
    const group = this.find(root, groupId);
    const member = memberOf(group, variant);
    if (group.settings.shared_worktree) throw new PuError("INVALID_STATE", `group ${groupId}'s members share the worktree ${group.settings.shared_worktree}; pu diff ${group.settings.shared_worktree} shows it`);
    if (!member.worktree_path || !member.branch || !group.settings.base_branch) throw new PuError("INVALID_STATE", `member ${variant} of ${groupId} has not started; it has no worktree yet`);
    if (member.host && member.worktree_id && this.hostMembers) return { ...(await this.hostMembers.diff(member.worktree_id, stat)), variant };
    const { envFiles } = await loadConfig(root);
    const changes = await diffWorktree({ path: member.worktree_path, branch: member.branch, baseBranch: group.settings.base_branch, stat, envFiles });
    return { ...changes, worktreeId: member.worktree_id ?? "", name: member.branch.replace(/^pu\//, ""), variant };
  }

  /** Merges the chosen member through the normal merge path; the others' worktrees (and the judge's) are cleaned unless `keep`. */
  async pick(root: string, groupId: string, variant: string | undefined, keep: boolean, strategy: "merge" | "squash" | "ff-only"): Promise<GroupsResults["group_pick"]> {
    const group = this.find(root, groupId);
    if (!isGroupFinished(group)) throw new PuError("INVALID_STATE", `group ${groupId} is still ${group.phase}; pick once it has finished (pu group status ${groupId})`);
    if (group.settings.shared_worktree) throw new PuError("INVALID_STATE", `group ${groupId}'s members shared one worktree; there is nothing to pick between`);
    const winner = typeof group.aggregated_output?.winner === "string" ? group.aggregated_output.winner : undefined;
    const chosen = variant ?? winner;
    if (chosen === undefined) {
      throw new PuError("INVALID_ARGUMENT", `group ${groupId} has no winner (aggregate ${group.settings.aggregate}${group.phase !== "complete" ? `, ${group.phase}` : ""}); name one: pu group pick ${groupId} VARIANT (${variantKeys(group).join(", ")})`);
    }
    const member = memberOf(group, chosen);
    if (memberState(group, chosen) !== "done") throw new PuError("INVALID_STATE", `member ${chosen} of ${groupId} is ${memberState(group, chosen)}, not done; pick a member that finished its work`);
    if (!member.worktree_id) throw new PuError("INVALID_STATE", `member ${chosen} of ${groupId} has no worktree`);
    const message = `pu group ${groupId}: pick ${chosen}`;
    // A member on a host: its branch fetched back over the transport, then merged here as any.
    const merge = member.host && this.hostMembers ? await this.hostMembers.merge(member.worktree_id, strategy, message) : await mergeRecordedWorktree(this.state, root, { worktreeId: member.worktree_id, strategy, message });
    await this.store.update(() => {
      group.picked = { variant_key: chosen, worktree_id: member.worktree_id ?? null, at: nowIso() };
    });
    this.state.log.event("group_picked", { projectRoot: root, groupId, variant: chosen, worktreeId: member.worktree_id });
    if (keep) return { groupId, variant: chosen, merge, clean: null };
    const judgeWorktree = (group as Record<string, unknown>).judge as { worktree_id?: string | null } | undefined;
    const others = variantKeys(group).filter((v) => v !== chosen);
    const worktreesOf = (onHost: boolean) => others.filter((v) => Boolean(group.members[v]?.host) === onHost).flatMap((v) => group.members[v]?.worktree_id ?? []);
    const here = [...worktreesOf(false), judgeWorktree?.worktree_id].filter((id): id is string => typeof id === "string" && id !== "");
    const manifest = await this.state.store.read(root);
    const toClean = here.filter((id) => manifest.worktrees[id] && manifest.worktrees[id].status !== "cleaned");
    // The others' work is what the person chose against; --keep is how to keep it.
    const clean = toClean.length > 0 ? await cleanWorktrees(this.state, root, { worktreeIds: toClean, force: true }) : null;
    const cleanedOnHosts: CleanResult["cleaned"] = [];
    for (const id of worktreesOf(true)) {
      const gone = await this.hostMembers?.discard(id).catch((error: unknown) => this.state.log.event("group_host_clean_failed", { projectRoot: root, groupId, worktreeId: id, error }));
      if (gone) cleanedOnHosts.push(...gone.cleaned);
    }
    if (cleanedOnHosts.length === 0) return { groupId, variant: chosen, merge, clean };
    return { groupId, variant: chosen, merge, clean: { cleaned: [...(clean?.cleaned ?? []), ...cleanedOnHosts], kept: clean?.kept ?? [] } };
  }
}

/** A control plane's member placed here: one launch, its variant key kept (the plane records the result under it). */
function placedMemberLaunch(spec: GroupRunSpec, variant: string): PendingSubAgent[] {
  const [delegator, ...more] = spec.delegators;
  if (delegator === undefined || more.length > 0) throw new PuError("INVALID_ARGUMENT", "a placed member names exactly one agent");
  parseDelegator(delegator);
  if (spec.sharedPrompt.trim() === "") throw new PuError("INVALID_ARGUMENT", "the member's prompt is empty");
  return [{ delegator_name: delegator, prompt: spec.sharedPrompt, variant_key: variant }];
}

function memberOf(group: GroupRecord, variant: string): NonNullable<GroupRecord["members"][string]> {
  const member = group.members[variant];
  if (!member) throw new PuError("NOT_FOUND", `group ${group.group_id} has no member ${variant} (members: ${variantKeys(group).join(", ")})`);
  return member;
}

export function groupView(group: GroupRecord): GroupView {
  const aggregated = group.aggregated_output ?? null;
  const ranking = Array.isArray(aggregated?.ranking) ? (aggregated.ranking as string[]) : [];
  const members: GroupMemberView[] = variantKeys(group).map((variant) => {
    const member = group.members[variant];
    const result = group.individual_outputs?.[variant];
    const { agentType, model } = parseDelegator(member?.delegator_name ?? "unknown");
    const rank = ranking.indexOf(variant);
    return {
      variant,
      delegator: member?.delegator_name ?? "",
      agentType,
      model: model ?? null,
      state: memberState(group, variant),
      agentId: member?.agent_id ?? null,
      worktreeId: member?.worktree_id ?? null,
      worktreePath: member?.worktree_path ?? null,
      branch: member?.branch ?? null,
      startedAt: member?.started_at ?? null,
      seconds: result?.seconds ?? (member?.started_at ? Math.round((Date.now() - Date.parse(member.started_at)) / 100) / 10 : null),
      exitCode: result?.exit_code ?? null,
      reason: result?.reason ?? null,
      gate: result?.gate ? { passed: result.gate.passed, exitCode: result.gate.exit_code ?? null, attempts: result.gate.attempts } : null,
      diff: result?.diff ?? null,
      output: result?.output ?? null,
      outputSource: result?.output_source ?? null,
      judgeRank: rank >= 0 ? rank + 1 : null,
      host: member?.host ?? null,
    };
  });
  const reasons = aggregated?.reasons;
  return {
    groupId: group.group_id,
    project: group.project,
    kind: group.step_type,
    phase: group.phase,
    ticketId: group.ticket_id,
    stepName: group.step_name,
    createdAt: group.created_at,
    finishedAt: group.finished_at ?? null,
    aggregate: group.settings.aggregate,
    join: group.settings.join,
    quorum: group.settings.quorum,
    gate: group.settings.gate?.run ?? null,
    expectedTotal: group.expected_total ?? members.length,
    pendingLaunches: group.pending_launches?.length ?? 0,
    members,
    winner: typeof aggregated?.winner === "string" ? aggregated.winner : null,
    reasons: typeof reasons === "string" || (reasons !== null && typeof reasons === "object") ? (reasons as string | Record<string, string>) : null,
    failureReasons: group.failure_reasons ?? [],
    picked: group.picked?.variant_key ?? null,
    aggregatedText: aggregatedText(group),
  };
}
