// What a host reports about its worktrees decides which branches this repository fetches and
// deletes: a branch that is not pu's (main) is refused, whatever the host says.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isPuError } from "@pu/core/errors";
import type { HostRecord } from "@pu/core/hosts-file";
import type { WorktreeView } from "@pu/ipc/protocol";
import type { HostLinks } from "../src/hosts/host-links.js";
import { dropMergedBranch, fetchBranchBack } from "../src/hosts/project-mirror.js";
import { makeTempRepo, type TempRepo } from "./helpers/git-repo.js";

let repo: TempRepo;
beforeEach(() => {
  repo = makeTempRepo();
});
afterEach(() => repo.cleanup());

const host = { name: "box", transport: { kind: "exec", command: ["true"] }, root: "/srv/pu", maxAgents: 4, addedAt: new Date().toISOString() } as unknown as HostRecord;

function branches(): string[] {
  return repo.git(["for-each-ref", "--format=%(refname:short)", "refs/heads"]).split("\n").filter(Boolean);
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("branches a host names", () => {
  it("are fetched back only when they are pu's: main is refused before any link is opened", async () => {
    const asked: string[] = [];
    const links = { gitUrl: (_host: HostRecord, service: string) => (asked.push(service), "ext::false") } as unknown as HostLinks;
    for (const branch of ["main", "pu/../main", "refs/heads/main", "pu/x:main", "-pu/x"]) {
      const error = await failure(fetchBranchBack(links, host, repo.root, "/srv/pu/mirror", branch));
      expect(isPuError(error) && error.code, branch).toBe("GIT_ERROR");
      expect((error as Error).message).toContain("not a pu branch");
    }
    expect(asked).toEqual([]);
  });

  it("are deleted here once merged only when they are pu's: main stays", async () => {
    repo.git(["checkout", "-q", "-b", "elsewhere"]);
    const worktree = { id: "wt-abcdefgh", name: "x", path: "/srv/pu/wt", branch: "main", baseBranch: "elsewhere", status: "active", agents: {} } as unknown as WorktreeView;
    const error = await failure(dropMergedBranch({ host: "box", projectRoot: repo.root, baseBranch: "elsewhere" }, worktree));
    expect(isPuError(error) && error.code).toBe("GIT_ERROR");
    expect(branches()).toContain("main");

    // A pu branch merged into its base goes, as before.
    repo.git(["branch", "pu/done"]);
    await dropMergedBranch({ host: "box", projectRoot: repo.root, baseBranch: "elsewhere" }, { ...worktree, branch: "pu/done" });
    expect(branches()).not.toContain("pu/done");
  });
});
