// Another package can reuse pu-core's schemas and types: a tiny consumer project depends on
// the packed @pu/core tarball, type-checks a .ts file against the installed declarations
// (through the package's `exports`, as a published package would be used), and runs it.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/pu-sandbox.js";
import { npm, npmEnv, packAll, TSC } from "./packed.js";

const execFileAsync = promisify(execFile);

// The consumer uses the same @types/node line as this workspace.
const nodeTypesRange = (JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies["@types/node"]!;

let base: string;
let consumer: string;

// Uses the schema (runtime) and the inferred types (compile time). The @ts-expect-error lines
// fail the compile if the types went missing (everything `any`) or the schema's types drifted.
const CONSUMER_TS = `
import { ManifestSchema, type Manifest } from "@pu/core/manifest";
import { PuError } from "@pu/core/errors";
import { readFileSync } from "node:fs";

const manifest: Manifest = ManifestSchema.parse(JSON.parse(readFileSync(process.argv[2]!, "utf8")));
const version: 1 | number = manifest.version;
// @ts-expect-error the manifest's version is a number, not a string
const wrong: string = manifest.version;
// @ts-expect-error an unknown key is kept (loose object) but typed unknown, not string
const unknownKey: string = manifest.noSuchField;
const agentIds: string[] = Object.keys(manifest.agents);
const broken = ManifestSchema.safeParse({ version: "one" });
const error = new PuError("INVALID_ARGUMENT", "from a consumer");
console.log(JSON.stringify({ version, agentIds, rejected: !broken.success, code: error.code, wrong: typeof wrong, unknownKey: typeof unknownKey }));
`;

// What tsconfig a consumer on Node 20 uses; skipLibCheck off so pu-core's own .d.ts files are checked too.
const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    skipLibCheck: false,
    types: ["node"],
    lib: ["ES2023"],
    outDir: "out",
  },
  files: ["consumer.ts"],
};

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "pu-consumer-")));
  const packs = path.join(base, "tarballs");
  mkdirSync(packs);
  const { core } = await packAll(packs);
  consumer = path.join(base, "consumer");
  mkdirSync(consumer);
  writeFileSync(
    path.join(consumer, "package.json"),
    JSON.stringify({ name: "pu-core-consumer", version: "1.0.0", private: true, type: "module", dependencies: { "@pu/core": `file:${core}` }, devDependencies: { "@types/node": nodeTypesRange } }, null, 2),
  );
  writeFileSync(path.join(consumer, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
  writeFileSync(path.join(consumer, "consumer.ts"), CONSUMER_TS);
  await npm(["install", "--no-package-lock"], consumer, npmEnv());
}, 300_000);

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

describe("a package reusing @pu/core from its tarball", () => {
  it("type-checks against the installed declarations and runs", async () => {
    // The installed copy, not a link into this workspace.
    expect(realpathSync(path.join(consumer, "node_modules/@pu/core"))).toBe(path.join(consumer, "node_modules/@pu/core"));
    await execFileAsync(process.execPath, [TSC, "-p", ".", "--noEmit"], { cwd: consumer }).catch((error: { stdout?: string }) => {
      throw new Error(`tsc --noEmit failed in the consumer:\n${error.stdout ?? String(error)}`);
    });
    // Checked above: emitting the JavaScript to run need not check the libraries again.
    await execFileAsync(process.execPath, [TSC, "-p", ".", "--skipLibCheck"], { cwd: consumer });
    const seed = path.join(REPO_ROOT, "packages/pu-core/test/fixtures/seed-manifest.json");
    const { stdout } = await execFileAsync(process.execPath, [path.join(consumer, "out/consumer.js"), seed], { cwd: consumer });
    const expectedIds = Object.keys((JSON.parse(readFileSync(seed, "utf8")) as { agents: object }).agents);
    expect(JSON.parse(stdout)).toEqual({ version: 1, agentIds: expectedIds, rejected: true, code: "INVALID_ARGUMENT", wrong: "number", unknownKey: "undefined" });
  });

  it("exposes only what `exports` lists", async () => {
    // json-state is an internal module of pu-core: present in the tarball, not importable.
    const probe = `import("@pu/core/json-state").then(() => console.log("imported"), (e) => console.log(e.code))`;
    const { stdout } = await execFileAsync(process.execPath, ["--input-type=module", "-e", probe], { cwd: consumer });
    expect(stdout.trim()).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED");
  });
});
