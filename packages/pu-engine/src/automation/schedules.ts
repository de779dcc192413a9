// Schedules: one timer for the whole daemon, armed for the earliest due schedule of
// every known project (projects.json). No fixed tick: the timer is re-armed after it
// fires and whenever a schedule is saved, deleted or toggled.
//
// Only project-local schedules (`<root>/.pu/schedules/`) fire. A global schedule
// (`$PU_HOME/schedules/`) names no project to run in, so it is a template to copy into
// a project; it is listed but never fires.
//
// Each schedule file keeps its own `nextRun` and `lastRun` (written back atomically,
// the user's other keys and comments kept) once it is trusted (`pu trust`); an untrusted
// schedule's file is never written (it is the project's, often tracked by git) and its
// next occurrence is kept in memory. A `nextRun` already past when the daemon
// looks at it outside its own timer (at start, or after a save) fell due while nobody
// was watching: it is not fired, it is counted in `.pu/schedule-state.json`
// (`missedRuns`) and `nextRun` moves to the next future occurrence.
import { promises as fs } from "node:fs";
import path from "node:path";
import writeFileAtomic from "write-file-atomic";
import {
  definitionPath,
  listDefinitions,
  loadDefinition,
  parseDefinition,
  renderTemplate,
  setDefinitionFields,
  type DefinitionScope,
  type ScheduleDefinition,
} from "@pu/core/definitions";
import { isPuError, PuError } from "@pu/core/errors";
import { LockedFile, readTextIfExists } from "@pu/core/locked-file";
import { puDir } from "@pu/core/paths";
import { parseScheduleState, scheduleStatePath, type ScheduleStateFile } from "@pu/core/schedule-state-file";
import { missedRuns, nextRun, type RecurrenceSpec } from "@pu/core/recurrence";
import { scheduleTrustItem } from "@pu/core/trust";
import { MAX_TIMER_MS } from "@pu/core/long-timeout";
import type { EngineState } from "../state.js";
import { agentDefinitionSpawnFields, definitionScopes, type SpawnFields } from "./definitions.js";
import { spawnAgent } from "./spawn.js";
import { runSwarm } from "./swarm.js";


interface DueSchedule {
  root: string;
  name: string;
  due: Date;
}

type ScanMode = "look" | "fire";

export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private queue: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly unsubscribe: (() => void)[];
  /** The next occurrence of each untrusted schedule (by file), kept here since its file is not written. */
  private readonly untrustedDue = new Map<string, Date>();

  /** `paused`: the work queue is paused, and with it every launch the daemon makes on its own. */
  constructor(
    private readonly state: EngineState,
    private readonly paused: () => boolean = () => false,
  ) {
    this.unsubscribe = [
      state.events.on("definition_changed", ({ kind, name }) => {
        if (kind === "schedule") this.rearm(`schedule ${name} changed`);
      }),
      state.events.on("project_added", () => this.rearm("project added")),
      // Its schedules may now write their times and fire.
      state.events.on("project_trusted", () => this.rearm("project trusted")),
    ];
  }

  /**
   * When the daemon next expects an untrusted schedule (by file) to fall due — to be held, not
   * fired — as kept in memory since its file is not written; undefined when it has none (trusted,
   * disabled, or not looked at yet). `pu schedule list` shows it.
   */
  untrustedNextRun(file: string): Date | undefined {
    return this.untrustedDue.get(file);
  }

  /** First look after a start: past-due runs are counted as missed, never fired. */
  start(): Promise<void> {
    return this.enqueue("look", "start");
  }

  stop(): void {
    this.stopped = true;
    for (const off of this.unsubscribe) off();
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Something changed (a schedule saved, deleted, toggled; a project added): look again. */
  private rearm(reason: string): void {
    void this.enqueue("look", reason);
  }

  /** Scans run one at a time, so a save during a firing cannot double-fire or lose a write. */
  private enqueue(mode: ScanMode, reason: string): Promise<void> {
    const next = this.queue.then(() => this.scan(mode, reason));
    this.queue = next.catch((err: unknown) => this.state.log.event("scheduler_failed", { reason, error: err }));
    return this.queue;
  }

  private async scan(mode: ScanMode, reason: string): Promise<void> {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    let earliest: DueSchedule | undefined;
    const seen = new Set<string>();
    for (const root of this.state.projects.list()) {
      for (const due of await this.scanProject(root, mode, seen)) {
        if (!earliest || due.due.getTime() < earliest.due.getTime()) earliest = due;
      }
    }
    // Schedules gone (deleted, or their project) leave nothing behind.
    for (const file of this.untrustedDue.keys()) if (!seen.has(file)) this.untrustedDue.delete(file);
    if (this.stopped || !earliest) return;
    // An early wake-up (a due date past setTimeout's limit) just scans and re-arms.
    const delay = Math.min(Math.max(0, earliest.due.getTime() - Date.now()), MAX_TIMER_MS);
    this.timer = setTimeout(() => void this.enqueue("fire", "timer"), delay);
    this.state.log.event("scheduler_armed", { reason, next: earliest.name, projectRoot: earliest.root, due: earliest.due.toISOString() });
  }

  /** Each enabled local schedule of a project: fired (mode fire) or counted as missed when past due; the future ones returned. */
  private async scanProject(root: string, mode: ScanMode, seen: Set<string>): Promise<DueSchedule[]> {
    let summaries;
    try {
      summaries = await listDefinitions("schedule", { projectRoot: root, home: this.state.home });
    } catch (err) {
      this.state.log.event("scheduler_project_skipped", { projectRoot: root, error: err });
      return [];
    }
    const upcoming: DueSchedule[] = [];
    for (const summary of summaries) {
      if (summary.scope !== "local") continue;
      seen.add(summary.path);
      if (summary.error !== undefined) {
        this.state.log.event("schedule_invalid", { projectRoot: root, name: summary.name, error: summary.error });
        continue;
      }
      try {
        const due = await this.visit(root, summary.name, summary.path, mode);
        if (due) upcoming.push({ root, name: summary.name, due });
      } catch (err) {
        this.state.log.event("schedule_failed", { projectRoot: root, name: summary.name, error: err });
      }
    }
    return upcoming;
  }

  /**
   * Brings one schedule file up to date; returns when it is next due (null: never again / disabled).
   * An untrusted schedule's file is only read (see visitUntrusted).
   */
  private async visit(root: string, name: string, file: string, mode: ScanMode): Promise<Date | null> {
    const schedule = await readSchedule(file, root);
    if (!schedule.enabled) {
      this.untrustedDue.delete(file);
      return null;
    }
    const spec = recurrenceOf(schedule);
    const held = await untrustedReason(this.state, root, name, file, schedule);
    if (held !== undefined) return this.visitUntrusted(root, name, file, mode, schedule, spec, held);

    const now = new Date();
    const fromFile = validDate(schedule.nextRun);
    let stored = fromFile;
    // Trusted since the last look: the next occurrence pu kept in memory while it was not
    // trusted (its file was not written) is the one the file takes up, unless the file has a
    // later one of its own.
    const remembered = this.untrustedDue.get(file);
    this.untrustedDue.delete(file);
    if (remembered !== undefined && (stored === undefined || stored.getTime() < remembered.getTime())) {
      if (remembered.getTime() > now.getTime()) {
        await writeScheduleTimes(file, { nextRun: remembered });
        return remembered;
      }
      stored = remembered;
    }
    if (stored === undefined) {
      const next = nextRun(spec, latest(now, schedule.lastRun));
      await writeScheduleTimes(file, { nextRun: next });
      return next;
    }
    if (stored.getTime() > now.getTime()) return stored;

    if (mode === "fire") {
      const firedAt = new Date();
      try {
        if (this.paused()) {
          // Held, not fired: the occurrence passes (no burst on resume) and the log says why.
          this.state.log.event("schedule_held_paused", { projectRoot: root, name, due: stored.toISOString() });
          const next = nextRun(spec, latest(new Date(), stored.toISOString()));
          await writeScheduleTimes(file, { nextRun: next });
          return next;
        }
        await fireSchedule(this.state, root, schedule);
        this.state.log.event("schedule_fired", { projectRoot: root, name, due: stored.toISOString() });
        await clearHeld(this.state, root, name);
      } catch (err) {
        // It ran (and failed); it still counts as this occurrence's run.
        this.state.log.event("schedule_fire_failed", { projectRoot: root, name, error: err });
      }
      const next = nextRun(spec, latest(new Date(), stored.toISOString()));
      await writeScheduleTimes(file, { lastRun: firedAt, nextRun: next });
      return next;
    }

    // Fell due while the daemon was not watching: report, do not fire a burst.
    const missed = Math.max(1, missedRuns(spec, new Date(stored.getTime() - 1), now).length);
    // The schedule moves on first: once the missed runs are visible, nextRun is already in
    // the future, and a crash between the two writes cannot count the same runs twice.
    const next = nextRun(spec, now);
    await writeScheduleTimes(file, { nextRun: next });
    await recordMissed(this.state, root, name, missed, stored);
    this.state.log.event("schedule_missed", { projectRoot: root, name, missed, nextRun: next?.toISOString() ?? null });
    return next;
  }

  /**
   * A schedule not trusted (yet): it never fires, and its file — the project's, often tracked
   * by git — is never written, since its person has not agreed to pu acting on it. Its next
   * occurrence is kept in memory only; each one that falls due while the daemon watches is
   * counted as held in `.pu/schedule-state.json` (pu's own file) with the reason. A `nextRun`
   * the file carries from elsewhere is used while it is ahead; one already past is not counted
   * as missed (it would not have run here).
   */
  private async visitUntrusted(
    root: string,
    name: string,
    file: string,
    mode: ScanMode,
    schedule: ScheduleDefinition,
    spec: RecurrenceSpec,
    reason: string,
  ): Promise<Date | null> {
    const now = new Date();
    const due = untrustedDue(schedule, spec, now, this.untrustedDue.get(file));
    if (due === null) {
      this.untrustedDue.delete(file);
      return null;
    }
    let next: Date | null = due;
    if (due.getTime() <= now.getTime()) {
      if (mode === "fire" && this.paused()) {
        this.state.log.event("schedule_held_paused", { projectRoot: root, name, due: due.toISOString() });
      } else {
        // A project's schedule starts agents on its own: never before `pu trust`. The
        // occurrence passes like a paused one, and the state file says why.
        this.state.log.event("schedule_held_untrusted", { projectRoot: root, name, due: due.toISOString(), reason });
        await recordHeld(this.state, root, name, reason, due);
      }
      next = nextRun(spec, latest(new Date(), due.toISOString()));
    }
    if (next === null) this.untrustedDue.delete(file);
    else this.untrustedDue.set(file, next);
    return next;
  }

}

/** Why a project's schedule may not fire (not trusted, or its trust cannot be read), or undefined when it may. */
async function untrustedReason(state: EngineState, root: string, name: string, file: string, schedule: ScheduleDefinition): Promise<string | undefined> {
  try {
    await state.trust.require(root, [scheduleTrustItem({ name, scope: "local", path: file, parsed: schedule })]);
    return undefined;
  } catch (err) {
    // Not knowing is not trusting: a trust.json pu cannot read holds the schedule too.
    return isPuError(err) && err.code === "UNTRUSTED" ? err.message : `cannot tell whether it is trusted: ${(err as Error).message}`;
  }
}

/**
 * An untrusted schedule's next due time: the one the daemon remembers, else the file's `nextRun`
 * while it is ahead, else the next occurrence from now (a past `nextRun` from elsewhere is not owed).
 */
function untrustedDue(schedule: ScheduleDefinition, spec: RecurrenceSpec, now: Date, remembered: Date | undefined): Date | null {
  if (remembered !== undefined) return remembered;
  const fromFile = validDate(schedule.nextRun);
  return fromFile !== undefined && fromFile.getTime() > now.getTime() ? fromFile : nextRun(spec, latest(now, schedule.lastRun));
}

function validDate(iso: string | undefined): Date | undefined {
  if (iso === undefined) return undefined;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

function latest(now: Date, iso: string | undefined): Date {
  if (iso === undefined) return now;
  const t = new Date(iso).getTime();
  return Number.isNaN(t) || t < now.getTime() ? now : new Date(t);
}

function recurrenceOf(schedule: ScheduleDefinition): RecurrenceSpec {
  return { recurrence: schedule.recurrence, startAt: schedule.startAt, timeZone: schedule.timeZone };
}

async function readSchedule(file: string, root: string | undefined): Promise<ScheduleDefinition> {
  const text = await fs.readFile(file, "utf8");
  return parseDefinition("schedule", text, root ? path.relative(root, file) : file).parsed;
}

// ---- firing -----------------------------------------------------------------

/** Starts what the schedule names: an agent definition, a swarm, or an inline prompt for an agent type. */
async function fireSchedule(state: EngineState, root: string, schedule: ScheduleDefinition): Promise<void> {
  const target = schedule.trigger;
  const vars = schedule.vars;
  if (target.swarm !== undefined) {
    const result = await runSwarm(state, root, target.swarm, vars);
    if (result.spawned.length === 0 && result.failed.length > 0) {
      throw new PuError(result.failed[0]?.code ?? "SPAWN_FAILED", result.failed.map((f) => f.message).join("; "));
    }
    return;
  }
  const fields: SpawnFields =
    target.agentDef !== undefined
      ? await agentDefinitionSpawnFields(state, root, target.agentDef, vars)
      : { prompt: renderTemplate(target.inlinePrompt ?? "", vars ?? {}).text, ...(target.agent ? { agent: target.agent } : {}) };
  if (schedule.root) {
    fields.root = true;
  } else if (schedule.worktree !== undefined) {
    const m = await state.store.read(root);
    const existing = Object.values(m.worktrees).find((w) => w.name === schedule.worktree && w.status === "active");
    if (existing) fields.worktree = existing.id;
    else fields.name = schedule.worktree;
  } else {
    fields.name = schedule.name;
  }
  await spawnAgent(state, root, fields);
}

// ---- files ------------------------------------------------------------------

/** Sets `lastRun`/`nextRun` in a schedule file, keeping every other key and comment; null removes nextRun. */
async function writeScheduleTimes(file: string, times: { lastRun?: Date; nextRun?: Date | null }): Promise<void> {
  const edits: Record<string, string | null> = {};
  if (times.lastRun) edits.lastRun = times.lastRun.toISOString();
  if (times.nextRun === null) edits.nextRun = null;
  else if (times.nextRun) edits.nextRun = times.nextRun.toISOString();
  await editScheduleFile(file, edits);
}

/**
 * Sets (or, with null, removes) top-level keys of a schedule file, keeping comments, order
 * and every other key as the user wrote them. The result is validated before it replaces
 * the file, so an edit can never leave a schedule pu cannot read.
 */
async function editScheduleFile(file: string, edits: Record<string, string | boolean | null>): Promise<void> {
  const before = await fs.readFile(file, "utf8");
  const after = setDefinitionFields(before, edits, file);
  if (after === before) return;
  parseDefinition("schedule", after, file);
  await writeFileAtomic(file, after, { fsync: true });
}

// ---- schedule-state.json ------------------------------------------------------

const stateFiles = new LockedFile();

/**
 * The project's missed and held counts: none yet when there is no file. A file pu cannot read
 * or parse is an error naming it (CONFIG_ERROR or IO_ERROR), never read as empty: the next
 * write would drop every other schedule's counts.
 */
async function readScheduleState(root: string): Promise<ScheduleStateFile> {
  const file = scheduleStatePath(puDir(root));
  const text = await readTextIfExists(file);
  if (text === null) return { version: 1, schedules: {} };
  try {
    return parseScheduleState(text, file);
  } catch (err) {
    throw new PuError("CONFIG_ERROR", `${(err as Error).message}; pu counts no missed or held run there until it is fixed or removed`, { cause: err });
  }
}

/**
 * Changes the project's counts under the file's lock, read fresh. A file that cannot be read is
 * left as it is: the change is logged (with the count it would have made) instead of written.
 */
async function changeScheduleState(state: EngineState, root: string, name: string, what: string, change: (data: ScheduleStateFile) => boolean): Promise<void> {
  const file = scheduleStatePath(puDir(root));
  try {
    await stateFiles.withLock(file, async (write) => {
      const data = await readScheduleState(root);
      if (change(data)) await write(`${JSON.stringify(data, null, 2)}\n`);
    });
  } catch (err) {
    state.log.event("schedule_state_unreadable", { projectRoot: root, name, notRecorded: what, file, error: err });
  }
}

function recordMissed(state: EngineState, root: string, name: string, count: number, firstMissed: Date): Promise<void> {
  return changeScheduleState(state, root, name, `${count} missed run(s)`, (data) => {
    const previous = data.schedules[name]?.missedRuns ?? 0;
    data.schedules[name] = { ...data.schedules[name], missedRuns: previous + count, lastMissedAt: firstMissed.toISOString() };
    return true;
  });
}

/** A run that fell due and was not fired because the schedule is not trusted: counted, with the reason. */
function recordHeld(state: EngineState, root: string, name: string, reason: string, due: Date): Promise<void> {
  return changeScheduleState(state, root, name, "a held run", (data) => {
    const previous = data.schedules[name];
    data.schedules[name] = { missedRuns: 0, ...previous, heldRuns: (previous?.heldRuns ?? 0) + 1, lastHeldAt: due.toISOString(), heldReason: reason };
    return true;
  });
}

/** It fired (it is trusted now): the runs it held before are no longer news. */
function clearHeld(state: EngineState, root: string, name: string): Promise<void> {
  return changeScheduleState(state, root, name, "clearing its held runs", (data) => {
    const entry = data.schedules[name];
    if (entry?.heldRuns === undefined) return false;
    const { heldRuns: _runs, lastHeldAt: _at, heldReason: _reason, ...rest } = entry;
    data.schedules[name] = rest;
    return true;
  });
}

/**
 * The `details` of a schedule in `definition_list`. Global schedules never fire, so their nextRun
 * is null. A project's schedule that is not trusted carries `untrusted` (why it is held) and, as
 * nextRun, when the daemon next expects it to fall due (`remembered`: its memory, since the file
 * is not written) — to be held, not run — never a `nextRun` the file carries that is past.
 */
export async function scheduleDetails(
  state: EngineState,
  name: string,
  scope: DefinitionScope,
  file: string,
  root: string | undefined,
  remembered: (file: string) => Date | undefined = () => undefined,
): Promise<Record<string, unknown>> {
  const schedule = await readSchedule(file, scope === "local" ? root : undefined);
  let recorded: ScheduleStateFile["schedules"][string] | undefined;
  let stateProblem: string | undefined;
  if (scope === "local" && root) {
    try {
      recorded = (await readScheduleState(root)).schedules[name];
    } catch (err) {
      stateProblem = (err as Error).message;
    }
  }
  const untrusted = scope === "local" && root ? await untrustedReason(state, root, name, file, schedule) : undefined;
  let next: string | null = null;
  if (scope === "local" && schedule.enabled && untrusted !== undefined) {
    const spec = recurrenceOf(schedule);
    const now = new Date();
    const due = untrustedDue(schedule, spec, now, remembered(file));
    // One the daemon is holding this very moment: the next after it is what is ahead.
    next = (due !== null && due.getTime() <= now.getTime() ? nextRun(spec, latest(now, due.toISOString())) : due)?.toISOString() ?? null;
  } else if (scope === "local" && schedule.enabled) {
    next = schedule.nextRun ?? nextRun(recurrenceOf(schedule), latest(new Date(), schedule.lastRun))?.toISOString() ?? null;
  }
  return {
    enabled: schedule.enabled,
    // Held, never fired, until `pu trust`: why (not trusted yet, or trust.json unreadable).
    ...(untrusted !== undefined ? { untrusted } : {}),
    recurrence: schedule.recurrence,
    nextRun: next,
    lastRun: schedule.lastRun ?? null,
    // Unknown (null), not 0, when the counts cannot be read: stateProblem says why.
    missedRuns: stateProblem !== undefined ? null : (recorded?.missedRuns ?? 0),
    ...(stateProblem !== undefined ? { stateProblem } : {}),
    // Runs not fired because the schedule was not trusted (`pu trust`), and the last reason.
    ...(recorded?.heldRuns ? { heldRuns: recorded.heldRuns, lastHeldAt: recorded.lastHeldAt ?? null, heldReason: recorded.heldReason ?? null } : {}),
    ...(scope === "global" ? { fires: false } : {}),
  };
}

/** `schedule_enable`: toggles `enabled` in the project's own schedule file. Enabling starts from now (nothing is owed). */
export async function setScheduleEnabled(
  state: EngineState,
  root: string,
  name: string,
  enabled: boolean,
): Promise<{ name: string; enabled: boolean; nextRun: string | null }> {
  const file = definitionPath("schedule", name, puDir(root));
  try {
    await fs.access(file);
  } catch {
    let hint = "";
    try {
      const found = await loadDefinition("schedule", name, definitionScopes(state, root));
      if (found.scope === "global") hint = `; ${found.path} is global and never runs by itself: copy it into ${path.dirname(file)}`;
    } catch {
      // no global one either
    }
    throw new PuError("NOT_FOUND", `no schedule named "${name}" in ${path.dirname(file)}${hint}`);
  }
  const schedule = await readSchedule(file, root);
  const next = enabled ? nextRun(recurrenceOf(schedule), latest(new Date(), schedule.lastRun)) : null;
  const edits: Record<string, string | boolean | null> = { enabled };
  if (enabled) edits.nextRun = next ? next.toISOString() : null;
  await editScheduleFile(file, edits);
  state.log.event("schedule_enabled", { projectRoot: root, name, enabled });
  return { name, enabled, nextRun: next?.toISOString() ?? null };
}
