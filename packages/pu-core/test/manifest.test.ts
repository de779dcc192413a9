import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import {
  AgentStatusSchema,
  findAgent,
  listAgents,
  newManifest,
  parseManifest,
  serializeManifest,
  type Manifest,
} from "../src/manifest.js";

const seedPath = join(import.meta.dirname, "fixtures", "seed-manifest.json");
const seedText = readFileSync(seedPath, "utf8");

function manifestError(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (isPuError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a PuError");
}

function seedWith(edit: (raw: Record<string, any>) => void): string {
  const raw = JSON.parse(seedText);
  edit(raw);
  return JSON.stringify(raw);
}

describe("seed manifest", () => {
  it("parses, serializes and parses back to the same value", () => {
    const first = parseManifest(seedText, seedPath);
    const second = parseManifest(serializeManifest(first), seedPath);
    expect(second).toEqual(first);
  });

  it("serializes to the seed itself, modulo whitespace and key order", () => {
    const serialized = serializeManifest(parseManifest(seedText, seedPath));
    expect(JSON.parse(serialized)).toEqual(JSON.parse(seedText));
  });

  it("writes 2-space JSON ending in a newline, known keys in schema order", () => {
    const serialized = serializeManifest(parseManifest(seedText, seedPath));
    expect(serialized.endsWith("}\n")).toBe(true);
    expect(serialized.split("\n")[1]).toBe('  "version": 1,');
    expect(Object.keys(JSON.parse(serialized))).toEqual([
      "version",
      "projectRoot",
      "worktrees",
      "agents",
      "createdAt",
      "updatedAt",
    ]);
    const agent = JSON.parse(serialized).worktrees["wt-abc12345"].agents["ag-xyz98765"];
    expect(Object.keys(agent)).toEqual(["id", "name", "agentType", "status", "prompt", "startedAt", "pid", "sessionId"]);
  });

  it("gives a stable key order whatever order the input had", () => {
    const shuffled = seedWith((raw) => {
      const agent = raw.agents["ag-root1111"];
      raw.agents["ag-root1111"] = Object.fromEntries(Object.entries(agent).reverse());
    });
    const a = serializeManifest(parseManifest(shuffled, "x"));
    const b = serializeManifest(parseManifest(seedText, "x"));
    expect(a).toBe(b);
  });
});

describe("agent status compatibility", () => {
  it.each([
    ["spawning", "streaming"],
    ["running", "streaming"],
    ["streaming", "streaming"],
    ["idle", "waiting"],
    ["suspended", "waiting"],
    ["waiting", "waiting"],
    ["completed", "broken"],
    ["failed", "broken"],
    ["killed", "broken"],
    ["lost", "broken"],
    ["broken", "broken"],
  ])("reads %s as %s, and writes the new value", (old, current) => {
    expect(AgentStatusSchema.parse(old)).toBe(current);
    const text = seedWith((raw) => {
      raw.worktrees["wt-abc12345"].agents["ag-xyz98765"].status = old;
    });
    const manifest = parseManifest(text, "old.json");
    expect(manifest.worktrees["wt-abc12345"]?.agents["ag-xyz98765"]?.status).toBe(current);
    expect(serializeManifest(manifest)).toContain(`"status": "${current}"`);
  });

  it("rejects an unknown status with a message naming the field path and the file", () => {
    const text = seedWith((raw) => {
      raw.worktrees["wt-abc12345"].agents["ag-xyz98765"].status = "zombie";
    });
    const error = manifestError(() => parseManifest(text, "/p/.pu/manifest.json"));
    expect(error.code).toBe("MANIFEST_INVALID");
    expect(error.message).toContain("/p/.pu/manifest.json");
    expect(error.message).toContain("worktrees.wt-abc12345.agents.ag-xyz98765.status");
    expect(error.message).toContain("zombie");
    expect(error.message).not.toContain("\n");
  });
});

describe("optional fields", () => {
  it("accepts null for optionals and omits null, undefined and false when writing", () => {
    const text = seedWith((raw) => {
      Object.assign(raw.agents["ag-root1111"], {
        prompt: null,
        exitCode: null,
        suspended: false,
        planMode: false,
        noTrigger: false,
        error: null,
      });
      raw.worktrees["wt-abc12345"].baseBranch = null;
      raw.worktrees["wt-abc12345"].mergedAt = null;
    });
    const manifest = parseManifest(text, "m.json");
    expect(manifest.agents["ag-root1111"]?.prompt).toBeUndefined();
    const written = JSON.parse(serializeManifest(manifest));
    const agent = written.agents["ag-root1111"];
    for (const key of ["prompt", "exitCode", "suspended", "planMode", "noTrigger", "error"]) {
      expect(agent).not.toHaveProperty(key);
    }
    expect(written.worktrees["wt-abc12345"]).not.toHaveProperty("baseBranch");
    expect(written.worktrees["wt-abc12345"]).not.toHaveProperty("mergedAt");
  });

  it("keeps a zero exit code and true booleans", () => {
    const manifest = parseManifest(seedText, "m.json");
    const agent = manifest.agents["ag-root1111"]!;
    agent.exitCode = 0;
    agent.suspended = true;
    agent.status = "broken";
    const written = JSON.parse(serializeManifest(manifest)).agents["ag-root1111"];
    expect(written.exitCode).toBe(0);
    expect(written.suspended).toBe(true);
    expect(written.planMode).toBe(true);
  });

  it("accepts every optional agent field and any agent type name", () => {
    const text = seedWith((raw) => {
      Object.assign(raw.agents["ag-root1111"], {
        agentType: "my-aider",
        completedAt: "2026-03-08T12:00:00.123Z",
        exitCode: 137,
        error: "killed",
        pid: 4242,
        suspended: true,
        suspendedAt: "2026-03-08T12:00:00+02:00",
        command: "aider --yes",
        triggerName: "review",
        triggerSeqIndex: 1,
        triggerState: "gating",
        triggerTotal: 3,
        gateAttempts: 2,
        noTrigger: true,
      });
    });
    const manifest = parseManifest(text, "m.json");
    expect(parseManifest(serializeManifest(manifest), "m.json")).toEqual(manifest);
    expect(manifest.agents["ag-root1111"]?.triggerState).toBe("gating");
  });

  it("finishedBy (pu stopped the agent after its work) is written after the exit, and omitted when absent", () => {
    const manifest = parseManifest(seedText, "m.json");
    const agent = manifest.agents["ag-root1111"]!;
    Object.assign(agent, { status: "broken", exitCode: 143, completedAt: "2026-03-08T12:00:00.000Z", finishedBy: "queue" });
    const keys = Object.keys(JSON.parse(serializeManifest(manifest)).agents["ag-root1111"]);
    expect(keys.indexOf("finishedBy")).toBe(keys.indexOf("exitCode") + 1);
    expect(parseManifest(serializeManifest(manifest), "m.json").agents["ag-root1111"]?.finishedBy).toBe("queue");
    delete agent.finishedBy;
    expect(serializeManifest(manifest)).not.toContain("finishedBy");
    // A value a later pu writes is kept, not refused.
    expect(parseManifest(seedWith((raw) => (raw.agents["ag-root1111"].finishedBy = "schedule")), "m.json").agents["ag-root1111"]?.finishedBy).toBe("schedule");
  });
});

describe("unknown keys", () => {
  it("survive a round trip at every level, after the known keys", () => {
    const text = seedWith((raw) => {
      raw.counter = 7;
      raw.worktrees["wt-abc12345"].futureField = { nested: [1, 2] };
      raw.worktrees["wt-abc12345"].agents["ag-xyz98765"].cgroupPath = "/pu/987654";
    });
    const manifest = parseManifest(text, "m.json");
    const written = serializeManifest(manifest);
    const reparsed = JSON.parse(written);
    expect(reparsed.counter).toBe(7);
    expect(reparsed.worktrees["wt-abc12345"].futureField).toEqual({ nested: [1, 2] });
    expect(reparsed.worktrees["wt-abc12345"].agents["ag-xyz98765"].cgroupPath).toBe("/pu/987654");
    expect(Object.keys(reparsed).at(-1)).toBe("counter");
  });
});

describe("invalid manifests", () => {
  it("reports bad JSON with the file and position", () => {
    const error = manifestError(() => parseManifest('{\n  "version": 1,\n  oops\n}', "/x/manifest.json"));
    expect(error.code).toBe("MANIFEST_INVALID");
    expect(error.message).toMatch(/\/x\/manifest\.json is not valid JSON at line 3, column 3/);
  });

  it("reports truncated JSON", () => {
    const error = manifestError(() => parseManifest(seedText.slice(0, 100), "/x/manifest.json"));
    expect(error.message).toContain("/x/manifest.json is not valid JSON");
  });

  it.each([
    ["a missing required field", (raw: any) => delete raw.worktrees["wt-abc12345"].branch, "worktrees.wt-abc12345.branch"],
    ["a wrong version", (raw: any) => (raw.version = 2), "version"],
    ["an empty agent type", (raw: any) => (raw.agents["ag-root1111"].agentType = ""), "agents.ag-root1111.agentType"],
    ["a bad date", (raw: any) => (raw.createdAt = "yesterday"), "createdAt"],
    ["a bad worktree status", (raw: any) => (raw.worktrees["wt-abc12345"].status = "gone"), "worktrees.wt-abc12345.status"],
  ])("names the path for %s", (_label, edit, path) => {
    const error = manifestError(() => parseManifest(seedWith(edit), "m.json"));
    expect(error.code).toBe("MANIFEST_INVALID");
    expect(error.message).toContain(`m.json is invalid: ${path}:`);
  });
});

describe("helpers", () => {
  it("newManifest is valid and empty", () => {
    const manifest = newManifest("/proj", new Date("2026-01-02T03:04:05.678Z"));
    expect(parseManifest(serializeManifest(manifest), "m")).toEqual({
      version: 1,
      projectRoot: "/proj",
      worktrees: {},
      agents: {},
      createdAt: "2026-01-02T03:04:05.678Z",
      updatedAt: "2026-01-02T03:04:05.678Z",
    });
  });

  it("findAgent locates root and worktree agents; listAgents lists both", () => {
    const manifest: Manifest = parseManifest(seedText, "m");
    expect(findAgent(manifest, "ag-root1111")?.worktree).toBeUndefined();
    expect(findAgent(manifest, "ag-xyz98765")?.worktree?.id).toBe("wt-abc12345");
    expect(findAgent(manifest, "ag-nothere1")).toBeUndefined();
    expect(findAgent(manifest, "toString")).toBeUndefined();
    expect(listAgents(manifest).map(({ agent, worktree }) => [agent.id, worktree?.id])).toEqual([
      ["ag-root1111", undefined],
      ["ag-xyz98765", "wt-abc12345"],
    ]);
  });
});
