/**
 * A plan session's files under `.pu/plans/<id>/`, read and written by the daemon alone.
 * Every change to a session goes through `update`: under the session file's lock (same-process
 * callers queue), the session, context and task files are read fresh, changed, validated by
 * their schemas and written atomically, session.json last. Agents write only their own
 * markdown, proposals and verdicts, which are validated before they count.
 */
import { promises as fs } from "node:fs";
import writeFileAtomic from "write-file-atomic";
import { LockedFile } from "@pu/core/locked-file";
import {
  parseContext,
  parseSession,
  parseTask,
  serializeContext,
  serializeSession,
  serializeTask,
  type Context,
  type Session,
  type Task,
} from "@pu/core/plan-files";
import { isPlanSessionId, plansDir, planLayout, taskIdFromFileName, type PlanLayout } from "@pu/core/plan-layout";
import { compareTaskIds } from "@pu/core/task-graph";
import { PuError, isPuError } from "@pu/core/errors";

export interface PlanFiles {
  session: Session;
  context: Context;
  tasks: Task[];
}

// One change writes the context, then each task file, then session.json; a reader between
// two of those writes would see a plan with some of its tasks. The daemon is the files' only
// reader and writer, so its reads take turns with its changes (the session file's turn).
const locks = new LockedFile();

/**
 * Whether the session's tasks are a plan the daemon accepted. Accepting writes the task files
 * one by one and the session, with its `plan_accepted` entry, last; task files without that
 * entry are what a daemon stopped in the middle of it left.
 */
export function tasksAccepted({ session, tasks }: Pick<PlanFiles, "session" | "tasks">): boolean {
  return tasks.length > 0 && session.evidence_log.some((entry) => entry.type === "plan_accepted");
}

async function readText(file: string): Promise<string> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new PuError("NOT_FOUND", `${file} does not exist`);
    throw new PuError("IO_ERROR", `cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
}

/** A plan file pu could not read: which, and what is wrong with it. */
export interface UnreadableFile {
  file: string;
  reason: string;
}

/**
 * Reads and parses one of the session's files. One that cannot be read or parsed (not JSON, not
 * its schema, a read error) is an INVALID_STATE error `FILE: what is wrong` with `{ file, reason }`
 * in its details: a corrupt file, named and kept (never written over), which `unreadableFile`
 * tells from every other error. A session.json that does not exist is the session not found.
 */
async function readFileWith<T>(file: string, parse: (text: string, file: string) => T, missingIsUnreadable: boolean): Promise<T> {
  try {
    return parse(await readText(file), file);
  } catch (error) {
    if (!isPuError(error) || (error.code === "NOT_FOUND" && !missingIsUnreadable)) throw error;
    const reason = error.message.startsWith(`${file}: `) ? error.message.slice(file.length + 2) : error.message;
    throw new PuError("INVALID_STATE", `${file}: ${reason}`, { cause: error, details: { file, reason } });
  }
}

/** The file and what is wrong, when `error` is a session file pu could not read; undefined for any other error. */
export function unreadableFile(error: unknown): UnreadableFile | undefined {
  if (!isPuError(error) || error.code !== "INVALID_STATE") return undefined;
  const { file, reason } = error.details ?? {};
  return typeof file === "string" && typeof reason === "string" ? { file, reason } : undefined;
}

/** The session's task files, in id order, never in the middle of a change. */
export function readTasks(layout: PlanLayout): Promise<Task[]> {
  return locks.readInTurn(layout.session, () => readTaskFiles(layout));
}

async function readTaskFiles(layout: PlanLayout): Promise<Task[]> {
  let names: string[];
  try {
    names = await fs.readdir(layout.tasksDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const tasks: Task[] = [];
  for (const name of names) {
    const id = taskIdFromFileName(name);
    if (id === undefined) continue;
    tasks.push(await readFileWith(layout.task(id), parseTask, true));
  }
  return tasks.sort((a, b) => compareTaskIds(a.id, b.id));
}

/** The session file alone (its options never change once the session starts). */
export function readSession(layout: PlanLayout): Promise<Session> {
  return readFileWith(layout.session, parseSession, false);
}

/**
 * The session's files as they are on disk between changes (a corrupt file is an error naming
 * it, never repaired: see `unreadableFile`).
 */
export function readPlan(layout: PlanLayout): Promise<PlanFiles> {
  return locks.readInTurn(layout.session, () => readPlanFiles(layout));
}

async function readPlanFiles(layout: PlanLayout): Promise<PlanFiles> {
  const session = await readSession(layout);
  const context = await readFileWith(layout.context, parseContext, true);
  return { session, context, tasks: await readTaskFiles(layout) };
}

/** Writes a new session's directory and files; the id must be unused. */
export async function createPlan(root: string, layout: PlanLayout, files: PlanFiles): Promise<void> {
  await fs.mkdir(plansDir(root), { recursive: true });
  try {
    await fs.mkdir(layout.dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") throw new PuError("INVALID_STATE", `plan session ${layout.sessionId} already exists`);
    throw error;
  }
  for (const dir of [layout.explorationDir, layout.proposedDir, layout.tasksDir, layout.reportsDir, layout.verificationDir]) {
    await fs.mkdir(dir, { recursive: true });
  }
  await writeFileAtomic(layout.context, serializeContext(files.context));
  for (const task of files.tasks) await writeFileAtomic(layout.task(task.id), serializeTask(task));
  await writeFileAtomic(layout.session, serializeSession(files.session));
}

/**
 * Changes a session under its lock. `change` gets the files as they are now and edits them in
 * place (or throws to change nothing); the session's `updated_at` is set. Returns the result.
 */
export function updatePlan<T>(layout: PlanLayout, change: (files: PlanFiles) => T | Promise<T>): Promise<{ files: PlanFiles; result: T }> {
  return locks.withLock(layout.session, async (write) => {
    const files = await readPlanFiles(layout);
    const before = new Map(files.tasks.map((task) => [task.id, serializeTask(task)]));
    const contextBefore = serializeContext(files.context);
    const result = await change(files);
    files.session.updated_at = new Date().toISOString();
    // Validate everything before writing anything: a bad change leaves the files as they were.
    const sessionText = serializeSession(parseSession(serializeSession(files.session), layout.session));
    const contextText = serializeContext(files.context);
    const taskTexts = files.tasks.map((task) => [task.id, serializeTask(parseTask(serializeTask(task), layout.task(task.id)))] as const);
    if (contextText !== contextBefore) await writeFileAtomic(layout.context, contextText);
    for (const [id, text] of taskTexts) if (before.get(id) !== text) await writeFileAtomic(layout.task(id), text);
    // The task files are the list: one the change dropped goes too.
    const kept = new Set(files.tasks.map((task) => task.id));
    for (const id of before.keys()) if (!kept.has(id)) await fs.rm(layout.task(id), { force: true });
    await write(sessionText);
    return { files, result };
  });
}

/** The ids of a project's plan sessions, oldest first (ids start with their creation time). */
export async function listPlanIds(root: string): Promise<string[]> {
  try {
    const names = await fs.readdir(plansDir(root));
    return names.filter(isPlanSessionId).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

export function layoutOf(root: string, sessionId: string): PlanLayout {
  return planLayout(root, sessionId);
}
