/**
 * `$PU_HOME/remote-projects.json`, the placements this control plane made on hosts, with the
 * daemon its only writer: every change is read, applied and written under the file's lock, and
 * the projects as last written are kept for the routing that reads them on every request.
 */
import { isPuError, type ErrorCode } from "@pu/core/errors";
import { FileWitness } from "@pu/core/file-witness";
import { hostMirrorPath, type HostRecord } from "@pu/core/hosts-file";
import { LockedFile, readTextIfExists } from "@pu/core/locked-file";
import { parseRemoteProjectsFile, remoteProjectsFilePath, type RemoteProject, type RemoteProjectsFile } from "@pu/core/remote-projects-file";
import { placementKey as keyOf } from "./remote-status.js";

export class RemoteProjectsRecord {
  private readonly file = new LockedFile();
  private readonly filePath: string;
  /** The projects as last read or written. */
  projects: RemoteProject[] = [];
  /**
   * Why the file could not be read (corrupt), until a read succeeds: while set, `projects` is
   * empty, so nothing placed on a host is routed — status and host list say so in one line and
   * `pu host remove` is refused (it would decide on an empty list).
   */
  problem: string | null = null;
  /** The code of that failure: CONFIG_ERROR (not valid) or IO_ERROR (could not be read). */
  problemCode: ErrorCode = "CONFIG_ERROR";
  /** The file as last read or written here: a change by anyone else is read again (`reloadIfChanged`). */
  private readonly version = new FileWitness();

  constructor(home: string) {
    this.filePath = remoteProjectsFilePath(home);
  }

  /** Reads the file; a corrupt one throws (and is never overwritten: nothing is written after a failed read). */
  async load(): Promise<void> {
    await this.version.note(this.filePath);
    try {
      this.projects = (await this.read()).projects;
      this.problem = null;
    } catch (error) {
      this.projects = [];
      this.problem = (error as Error).message;
      this.problemCode = isPuError(error) ? error.code : "IO_ERROR";
      throw error;
    }
  }

  /** Reads the file again while it was unreadable (a person may have fixed it since); quiet either way. */
  async retryIfUnreadable(): Promise<void> {
    if (this.problem !== null) await this.load().catch(() => undefined);
  }

  /** Whether the file on disk is no longer the one last read or written here (a stat, no read). */
  changedOnDisk(): Promise<boolean> {
    return this.version.changed(this.filePath);
  }

  /**
   * Reads the file again when it was unreadable or someone else changed it since (a person fixed
   * it, or broke it: then nothing placed on a host is routed, as at start); quiet either way.
   * Whether it was read.
   */
  async reloadIfChanged(): Promise<boolean> {
    if (this.problem === null && !(await this.changedOnDisk())) return false;
    await this.load().catch(() => undefined);
    return true;
  }

  /** Changes the record's entry of a placement, if it is still there. */
  changeProject(project: Pick<RemoteProject, "host" | "projectRoot">, fn: (found: RemoteProject) => void): Promise<void> {
    return this.change((file) => {
      const found = file.projects.find((p) => keyOf(p) === keyOf(project));
      if (found) fn(found);
      return file;
    });
  }

  /** Changes the record's entry of a placement, made first if the project has none on that host yet. */
  changeOrAddProject(host: HostRecord, projectRoot: string, baseBranch: string, fn: (project: RemoteProject) => void): Promise<void> {
    return this.change((file) => {
      const projects = [...file.projects];
      let project = projects.find((p) => keyOf(p) === keyOf({ host: host.name, projectRoot }));
      if (!project) {
        project = { host: host.name, projectRoot, mirror: hostMirrorPath(host, projectRoot), baseBranch, agentIds: [], worktreeIds: [], merged: [], lastReport: null, lastSeenAt: null, spawning: [] };
        projects.push(project);
      }
      fn(project);
      return { ...file, projects };
    });
  }

  async change(fn: (file: RemoteProjectsFile) => RemoteProjectsFile): Promise<void> {
    await this.file.withLock(this.filePath, async (write) => {
      const next = fn(await this.read());
      await write(`${JSON.stringify(next)}\n`);
      await this.version.note(this.filePath);
      this.projects = next.projects;
      this.problem = null;
    });
  }

  private async read(): Promise<RemoteProjectsFile> {
    const text = await readTextIfExists(this.filePath);
    return text === null ? { version: 1, projects: [] } : parseRemoteProjectsFile(text, this.filePath);
  }
}
