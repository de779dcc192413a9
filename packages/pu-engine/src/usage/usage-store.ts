/**
 * The projects' `.pu/usage.json`, held in memory once read: read once per project (a corrupt
 * file is reported, counted on in memory, and never overwritten — nor one that no longer parses
 * when it is found changed under the daemon before a write), written back by this store
 * only (locked, atomic), and each project's prices and daily budget from its config, read again
 * only when the config changed.
 */
import { statSync } from "node:fs";
import { loadConfig, type BudgetLimit } from "@pu/core/config";
import { PuError } from "@pu/core/errors";
import { FileWitness } from "@pu/core/file-witness";
import { LockedFile, readTextIfExists } from "@pu/core/locked-file";
import { configPath } from "@pu/core/paths";
import { emptyUsageFile, parseUsageFile, usageFilePath, type AgentUsage, type UsageFile } from "@pu/core/usage-file";
import type { DaemonLog } from "../daemon-log.js";
import { PriceBook, loadPriceTable } from "./prices.js";

/** Prices (config) are looked at again at most this often per project. */
const PRICES_MS = 10_000;

export interface ProjectUsage {
  root: string;
  file: UsageFile;
  /** Why usage.json could not be read: reported, and never overwritten. */
  problem?: string;
  dirty: boolean;
  /** usage.json as this store last read or wrote it. */
  witness: FileWitness;
  prices?: { book: PriceBook; daily?: BudgetLimit; at: number; mtime: number };
  /** The UTC day whose daily budget was found spent (told once a day). */
  dailySpentOn?: string;
}

export class UsageStore {
  private readonly projects = new Map<string, ProjectUsage>();
  private readonly loading = new Map<string, Promise<ProjectUsage>>();
  private readonly file = new LockedFile();

  constructor(
    private readonly log: DaemonLog,
    /** Told once a project's file is read (and readable). */
    private readonly onLoaded: (project: ProjectUsage) => void,
  ) {}

  /** The project's usage, read from usage.json the first time. */
  project(root: string): Promise<ProjectUsage> {
    const known = this.projects.get(root);
    if (known) return Promise.resolve(known);
    let pending = this.loading.get(root);
    if (!pending) {
      pending = (async () => {
        const path = usageFilePath(root);
        let project: ProjectUsage;
        const witness = new FileWitness();
        try {
          await witness.note(path);
          const text = await readTextIfExists(path);
          project = { root, file: text === null ? emptyUsageFile() : parseUsageFile(text, path), dirty: false, witness };
        } catch (error) {
          const problem = unreadable(error);
          this.log.event("usage_file_unreadable", { projectRoot: root, problem });
          project = { root, file: emptyUsageFile(), problem, dirty: false, witness };
        }
        this.projects.set(root, project);
        this.loading.delete(root);
        if (!project.problem) this.onLoaded(project);
        return project;
      })();
      this.loading.set(root, pending);
    }
    return pending;
  }

  /** The project if it was read already (status reports read nothing). */
  loaded(root: string): ProjectUsage | undefined {
    return this.projects.get(root);
  }

  /** The project, to change: refused in one line while its file is unreadable. */
  async writable(root: string): Promise<ProjectUsage> {
    const project = await this.project(root);
    if (project.problem) throw new PuError("CONFIG_ERROR", project.problem);
    return project;
  }

  /** The agent's entry in a project already read. */
  loadedEntry(agentId: string): AgentUsage | undefined {
    for (const project of this.projects.values()) if (Object.hasOwn(project.file.agents, agentId)) return project.file.agents[agentId];
    return undefined;
  }

  /** The project's prices (the price table loaded first); its config looked at again once they are old. */
  async prices(project: ProjectUsage): Promise<PriceBook> {
    await loadPriceTable();
    const now = Date.now();
    if (project.prices && now - project.prices.at < PRICES_MS) return project.prices.book;
    // Parsing the config is the costly part: only when the file changed.
    const mtime = configMtime(project.root);
    if (project.prices && project.prices.mtime === mtime) {
      project.prices.at = now;
      return project.prices.book;
    }
    let overrides = {};
    let daily: BudgetLimit | undefined;
    try {
      const config = await loadConfig(project.root);
      overrides = config.prices;
      daily = config.budgets?.daily;
    } catch {
      // a broken config is reported where it is used; the table alone prices meanwhile
    }
    project.prices = { book: new PriceBook(overrides), at: now, mtime, ...(daily ? { daily } : {}) };
    return project.prices.book;
  }

  /** The prices a status report uses now, without waiting; old ones are read again for the next. */
  pricesNow(project: ProjectUsage): PriceBook {
    if (!project.prices || Date.now() - project.prices.at >= PRICES_MS) void this.prices(project);
    return project.prices?.book ?? new PriceBook();
  }

  async persistAll(): Promise<void> {
    for (const root of this.projects.keys()) await this.persist(root);
  }

  /** Writes the project's file when something changed in it. */
  async persist(root: string): Promise<void> {
    const project = this.projects.get(root);
    if (!project || project.problem || !project.dirty) return;
    project.dirty = false;
    try {
      const path = usageFilePath(root);
      await this.file.withLock(path, async (write) => {
        // Changed under the daemon: written over only while it still parses.
        const spoiled = await project.witness.spoiledSinceNoted(path, (text) => parseUsageFile(text, path));
        if (spoiled !== undefined) {
          project.problem = unreadable(spoiled);
          this.log.event("usage_file_unreadable", { projectRoot: root, problem: project.problem });
          return;
        }
        await write(`${JSON.stringify(project.file)}\n`);
        await project.witness.note(path);
      });
    } catch (error) {
      project.dirty = true;
      this.log.event("usage_write_failed", { projectRoot: root, error });
    }
  }
}

/** Read once per daemon: a fix is picked up by a restart, and the line says so. */
function unreadable(error: unknown): string {
  return `${error instanceof Error ? error.message : String(error)} (pu does not overwrite it; fix or move it, then \`pu daemon restart\`)`;
}

function configMtime(root: string): number {
  try {
    return statSync(configPath(root)).mtimeMs;
  } catch {
    return 0;
  }
}
