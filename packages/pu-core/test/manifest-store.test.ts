import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import { parseManifest, serializeManifest } from "../src/manifest.js";
import { lockPath, ManifestStore } from "../src/manifest-store.js";
import { manifestPath, puDir } from "../src/paths.js";

const packageDir = join(import.meta.dirname, "..");
const worker = join(import.meta.dirname, "fixtures", "manifest-worker.mjs");
const seedText = await readFile(join(import.meta.dirname, "fixtures", "seed-manifest.json"), "utf8");

let root: string;
const children = new Set<ChildProcess>();
const store = new ManifestStore();

beforeAll(() => {
  if (!existsSync(join(packageDir, "dist", "manifest-store.js"))) {
    throw new Error("build @pu/core first (pnpm turbo run build --filter=@pu/core): the worker imports dist/");
  }
});
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "pu-store-"));
});
afterEach(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  children.clear();
  await rm(root, { recursive: true, force: true });
});

async function puErrorOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isPuError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a PuError");
}

function startWorker(...args: string[]): { child: ChildProcess; lines: string[]; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [worker, root, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  const lines: string[] = [];
  let stderr = "";
  let partial = "";
  child.stdout!.setEncoding("utf8").on("data", (data: string) => {
    const parts = (partial + data).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
  });
  child.stderr!.setEncoding("utf8").on("data", (data: string) => (stderr += data));
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      if (code !== 0 && code !== null) console.error(`worker ${args.join(" ")} failed:\n${stderr}`);
      resolve(code);
    }),
  );
  return { child, lines, exited };
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("create / read / exists", () => {
  it("creates a manifest once and never overwrites it", async () => {
    expect(await store.exists(root)).toBe(false);
    const first = await store.create(root, new Date("2026-03-01T00:00:00.000Z"));
    expect(first.created).toBe(true);
    expect(first.manifest.projectRoot).toBe(root);
    expect(await store.exists(root)).toBe(true);
    await store.update(root, (m) => {
      m.agents["ag-aaaaaaaa"] = {
        id: "ag-aaaaaaaa",
        name: "a",
        agentType: "terminal",
        status: "streaming",
        startedAt: "2026-03-01T00:00:01.000Z",
      };
    });
    const second = await store.create(root);
    expect(second.created).toBe(false);
    expect(Object.keys(second.manifest.agents)).toEqual(["ag-aaaaaaaa"]);
    expect((await store.read(root)).createdAt).toBe("2026-03-01T00:00:00.000Z");
  });

  it("create throws on an invalid existing manifest and leaves it alone", async () => {
    await mkdir(puDir(root), { recursive: true });
    await writeFile(manifestPath(root), "not json");
    expect((await puErrorOf(store.create(root))).code).toBe("MANIFEST_INVALID");
    expect(await readFile(manifestPath(root), "utf8")).toBe("not json");
  });

  it("read and update of a missing manifest say NOT_INITIALIZED", async () => {
    expect((await puErrorOf(store.read(root))).code).toBe("NOT_INITIALIZED");
    expect((await puErrorOf(store.update(root, () => undefined))).code).toBe("NOT_INITIALIZED");
    await mkdir(puDir(root));
    const error = await puErrorOf(store.update(root, () => undefined));
    expect(error.code).toBe("NOT_INITIALIZED");
    expect(error.message).toContain("pu init");
    expect(existsSync(lockPath(root))).toBe(false);
  });

  it("a manifest path that cannot be read is an IO_ERROR naming it", async () => {
    await mkdir(manifestPath(root), { recursive: true });
    const error = await puErrorOf(store.read(root));
    expect(error.code).toBe("IO_ERROR");
    expect(error.message).toContain(manifestPath(root));
  });
});

describe("update", () => {
  beforeEach(async () => {
    await mkdir(puDir(root), { recursive: true });
    await writeFile(manifestPath(root), seedText);
  });

  it("writes the change with a fresh updatedAt, in canonical form, keeping unknown keys", async () => {
    const raw = JSON.parse(seedText);
    raw.worktrees["wt-abc12345"].agents["ag-xyz98765"].cgroupPath = "/pu/123";
    raw.agents["ag-root1111"].status = "idle";
    await writeFile(manifestPath(root), JSON.stringify(raw));
    const before = Date.now();
    const result = await store.update(root, (m) => {
      m.agents["ag-root1111"]!.suspended = true;
      return "ok";
    });
    expect(result).toBe("ok");
    const text = await readFile(manifestPath(root), "utf8");
    const manifest = parseManifest(text, "m");
    expect(text).toBe(serializeManifest(manifest));
    expect(manifest.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(manifest.updatedAt)).toBeGreaterThanOrEqual(before - 1);
    expect(manifest.agents["ag-root1111"]).toMatchObject({ suspended: true, status: "waiting" });
    expect(manifest.worktrees["wt-abc12345"]!.agents["ag-xyz98765"]!.cgroupPath).toBe("/pu/123");
  });

  it("writes nothing when fn throws", async () => {
    await expect(
      store.update(root, (m) => {
        m.projectRoot = "/changed";
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await readFile(manifestPath(root), "utf8")).toBe(seedText);
    await store.update(root, () => undefined);
  });

  it("refuses to write a manifest fn made invalid", async () => {
    const error = await puErrorOf(
      store.update(root, (m) => {
        (m.agents["ag-root1111"] as { status: string }).status = "exploded";
      }),
    );
    expect(error.code).toBe("MANIFEST_INVALID");
    expect(error.message).toContain("agents.ag-root1111.status");
    expect(await readFile(manifestPath(root), "utf8")).toBe(seedText);
  });

  it("reports a corrupt manifest with its file name and leaves it byte-identical", async () => {
    const corrupt = `${seedText.slice(0, 200)}\u0000garbage`;
    await writeFile(manifestPath(root), corrupt);
    for (const attempt of [store.read(root), store.update(root, () => undefined), store.create(root)]) {
      const error = await puErrorOf(attempt);
      expect(error.code).toBe("MANIFEST_INVALID");
      expect(error.message).toContain(manifestPath(root));
    }
    expect(await readFile(manifestPath(root), "utf8")).toBe(corrupt);
  });

  it("serializes concurrent updates within one process", async () => {
    await Promise.all(
      Array.from({ length: 50 }, () =>
        store.update(root, async (m) => {
          const value = (m.counter as number | undefined) ?? 0;
          await new Promise((resolve) => setImmediate(resolve));
          m.counter = value + 1;
        }),
      ),
    );
    expect((await store.read(root)).counter).toBe(50);
  });
});

describe("across processes", () => {
  beforeEach(async () => {
    await mkdir(puDir(root), { recursive: true });
    await writeFile(manifestPath(root), seedText);
  });

  it("8 processes x 200 updates lose nothing", { timeout: 300_000 }, async () => {
    const workers = Array.from({ length: 8 }, () => startWorker("increment", "200"));
    const codes = await Promise.all(workers.map((w) => w.exited));
    expect(codes).toEqual(Array(8).fill(0));
    const manifest = await store.read(root);
    expect(manifest.counter).toBe(1600);
    const { counter: _counter, updatedAt: _updated, ...rest } = manifest;
    const { updatedAt: _seedUpdated, ...seedRest } = parseManifest(seedText, "seed");
    expect(rest).toEqual(seedRest);
    expect(existsSync(lockPath(root))).toBe(false);
  });

  it("a writer killed mid-loop leaves a readable manifest and the next update succeeds", { timeout: 120_000 }, async () => {
    const { child, lines, exited } = startWorker("loop");
    await waitFor(() => lines.length >= 40, "the worker's updates");
    child.kill("SIGKILL");
    await exited;
    const afterKill = await store.read(root);
    const counter = afterKill.counter as number;
    expect(counter).toBeGreaterThanOrEqual(40);
    // Whether or not it died holding the lock, the next update gets through.
    await store.update(root, (m) => {
      m.counter = (m.counter as number) + 1;
    });
    expect((await store.read(root)).counter).toBe(counter + 1);
  });

  it("recovers a lock left behind by a writer killed while holding it", { timeout: 120_000 }, async () => {
    const { child, lines, exited } = startWorker("hold");
    await waitFor(() => lines.includes("holding 3"), "the worker to hold the lock");
    child.kill("SIGKILL");
    await exited;
    expect(existsSync(lockPath(root))).toBe(true);
    // The killed holder's third update never landed; the file is whole and has the first two.
    expect((await store.read(root)).counter).toBe(2);
    await store.update(root, (m) => {
      m.counter = (m.counter as number) + 1;
    });
    expect((await store.read(root)).counter).toBe(3);
    expect(existsSync(lockPath(root))).toBe(false);
  });
});
