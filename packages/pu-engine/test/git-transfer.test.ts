// What a failed push or fetch to a host's mirror says: git's own reason, not the last line of
// its advice ("and the repository exists."), which is what a person reads in `pu spawn --on`.
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fetchRefs, pushRefs } from "../src/git/transfer.js";
import { isolateGitConfig, makeTempRepo, type TempRepo } from "./helpers/git-repo.js";

const made: TempRepo[] = [];
let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  for (const repo of made.splice(0)) repo.cleanup();
});

describe("git transfer errors", () => {
  it("a push to a repository that is not there names git's fatal line, not its closing advice", async () => {
    restore = isolateGitConfig();
    const repo = makeTempRepo("pu-transfer-");
    made.push(repo);
    const missing = path.join(repo.root, "..", "no-such-mirror");
    const pushed = pushRefs(repo.root, missing, ["main:refs/heads/main"]);
    await expect(pushed).rejects.toMatchObject({ code: "GIT_ERROR" });
    const message = ((await pushed.catch((e: unknown) => e)) as Error).message;
    expect(message).toBe(`git push failed: '${missing}' does not appear to be a git repository`);
    await expect(fetchRefs(repo.root, missing, ["main"])).rejects.toThrow(`git fetch failed: '${missing}' does not appear to be a git repository`);
  });
});
