// An agent's own command line (`pu spawn --command`) and its variables (`--env`) are kept in the
// project's manifest so that `pu play` can start it again. The manifest lives in the project,
// where a cloned repository can bring one of its own: an entry pu never wrote, whose `command`
// or `env` (PATH, NODE_OPTIONS…) would then run on `pu play` without anyone having agreed to it.
// So pu seals what it writes: an HMAC over the agent's id, project, command and variables, with
// a key only this user's pu holds ($PU_HOME/launch-seal.key, 0600). A resume runs a command or
// variables only under a seal that matches.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { PuError } from "@pu/core/errors";

/** What a seal covers: the fields of an agent entry that decide what a resume runs. */
export interface SealedLaunch {
  id: string;
  command?: string;
  env?: Record<string, string>;
  launchSeal?: string;
}

const KEY_BYTES = 32;

export class LaunchSeals {
  private readonly file: string;
  private key: Promise<Buffer> | undefined;

  constructor(home: string) {
    this.file = path.join(home, "launch-seal.key");
  }

  /** Whether resuming the agent needs a seal: only an entry with its own command or variables. */
  static needsSeal(agent: SealedLaunch): boolean {
    return agent.command !== undefined || (agent.env !== undefined && Object.keys(agent.env).length > 0);
  }

  /** The seal for an entry pu is writing (undefined when it has nothing to seal). */
  async seal(projectRoot: string, agent: SealedLaunch): Promise<string | undefined> {
    if (!LaunchSeals.needsSeal(agent)) return undefined;
    return this.mac(await this.keyBytes(), projectRoot, agent);
  }

  /** Throws UNTRUSTED unless the entry's command and variables are the ones pu sealed for it. */
  async check(projectRoot: string, agent: SealedLaunch, manifestFile: string): Promise<void> {
    if (!LaunchSeals.needsSeal(agent)) return;
    const expected = Buffer.from(this.mac(await this.keyBytes(), projectRoot, agent));
    const given = Buffer.from(agent.launchSeal ?? "");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return;
    throw new PuError(
      "UNTRUSTED",
      `${agent.id}'s command or environment in ${manifestFile} was not written by this pu (a manifest from elsewhere, or edited by hand); pu will not run it. Start the agent again with \`pu spawn\`, and remove this one with \`pu kill ${agent.id}\``,
      { details: { agentId: agent.id, manifest: manifestFile } },
    );
  }

  private mac(key: Buffer, projectRoot: string, agent: SealedLaunch): string {
    // Sorted variables: the same set seals the same whichever order it was written in.
    const env = Object.entries(agent.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const message = JSON.stringify(["pu-launch-seal-1", projectRoot, agent.id, agent.command ?? null, env]);
    return createHmac("sha256", key).update(message).digest("base64url");
  }

  private keyBytes(): Promise<Buffer> {
    this.key ??= this.loadOrCreateKey().catch((error: unknown) => {
      this.key = undefined;
      throw error;
    });
    return this.key;
  }

  /** The key, made once per PU_HOME; a key file of the wrong size is reported, never replaced. */
  private async loadOrCreateKey(): Promise<Buffer> {
    // Written whole to a temp file, then linked into place: a crash never leaves a short key,
    // and a key already there is never replaced.
    const temp = `${this.file}.${process.pid}.${randomBytes(4).toString("hex")}`;
    try {
      await fs.writeFile(temp, randomBytes(KEY_BYTES), { mode: 0o600 });
      await fs.link(temp, this.file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    } finally {
      await fs.rm(temp, { force: true });
    }
    const key = await fs.readFile(this.file);
    if (key.length !== KEY_BYTES) {
      throw new PuError("IO_ERROR", `${this.file} is not a key pu wrote (${key.length} bytes, expected ${KEY_BYTES}); move it aside to make a new one (agents started with their own command or variables then need \`pu spawn\` again)`);
    }
    return key;
  }
}
