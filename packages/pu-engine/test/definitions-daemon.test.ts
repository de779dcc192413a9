// Definition requests (list/get/save/delete) and spawn --template, against a real daemon.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@pu/ipc/client";
import { cleanupAll, FAKE_AGENT_COMMAND, makeProject, startTestDaemon, trackAgentPid, trustProject, waitFor } from "./helpers/daemon.js";

afterEach(cleanupAll);

async function logText(client: Client, agentId: string): Promise<string> {
  return Buffer.from((await client.request("logs", { agentId })).data).toString("utf8");
}

const TRIGGER = `on: agent_idle\nsequence:\n  - inject: "echo hi"\n`;

describe("definition requests", () => {
  it("save validates and refuses to overwrite; get, list (local hides global) and delete", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    const projectRoot = repo.root;

    const saved = await client.request("definition_save", { projectRoot, kind: "trigger", name: "review", content: TRIGGER });
    expect(saved).toEqual({ path: path.join(projectRoot, ".pu", "triggers", "review.yaml"), scope: "local", warnings: [] });
    expect(readFileSync(saved.path, "utf8")).toBe(TRIGGER);

    await expect(client.request("definition_save", { projectRoot, kind: "trigger", name: "review", content: TRIGGER })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    const changed = TRIGGER.replace("echo hi", "echo changed");
    await client.request("definition_save", { projectRoot, kind: "trigger", name: "review", content: changed, overwrite: true });
    expect(readFileSync(saved.path, "utf8")).toBe(changed);

    // Invalid content names the file and the field, and is never written.
    const bad = client.request("definition_save", { projectRoot, kind: "trigger", name: "broken", content: "on: agent_idle\nsequence: []\n" });
    await expect(bad).rejects.toMatchObject({ code: "CONFIG_ERROR" });
    await expect(bad).rejects.toThrow(/broken\.yaml: sequence: /);
    expect(existsSync(path.join(projectRoot, ".pu", "triggers", "broken.yaml"))).toBe(false);

    const globalSaved = await client.request("definition_save", { kind: "trigger", name: "review", content: TRIGGER, scope: "global" });
    expect(globalSaved.path).toBe(path.join(daemon.home, "triggers", "review.yaml"));
    await client.request("definition_save", { kind: "trigger", name: "global-only", content: TRIGGER, scope: "global" });

    const got = await client.request("definition_get", { projectRoot, kind: "trigger", name: "review" });
    expect(got).toMatchObject({ name: "review", scope: "local", path: saved.path, content: changed });
    expect(got.parsed).toMatchObject({ on: "agent_idle", sequence: [{ inject: "echo changed" }] });

    const { definitions } = await client.request("definition_list", { projectRoot, kind: "trigger" });
    expect(definitions.map((d) => [d.name, d.scope])).toEqual([
      ["review", "local"],
      ["global-only", "global"],
    ]);
    const globalOnly = await client.request("definition_list", { kind: "trigger" });
    expect(globalOnly.definitions.map((d) => d.name)).toEqual(["global-only", "review"]);

    expect(await client.request("definition_delete", { projectRoot, kind: "trigger", name: "review" })).toEqual({ path: saved.path });
    // With the local copy gone, the global one shows through.
    expect((await client.request("definition_get", { projectRoot, kind: "trigger", name: "review" })).scope).toBe("global");
    await expect(
      client.request("definition_delete", { projectRoot, kind: "trigger", name: "review", scope: "local" }),
    ).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(client.request("definition_get", { projectRoot, kind: "swarm", name: "none" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(client.request("definition_get", { projectRoot, kind: "swarm", name: "../escape" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });

  it("spawn --template renders vars into the prompt, applies frontmatter and warns about missing vars", async () => {
    const daemon = await startTestDaemon();
    const client = await daemon.client();
    const repo = await makeProject(client);
    mkdirSync(path.join(repo.root, ".pu", "templates"), { recursive: true });
    writeFileSync(
      path.join(repo.root, ".pu", "templates", "greet.md"),
      `---\ndescription: says hello\ncommand: ${JSON.stringify(FAKE_AGENT_COMMAND)}\n---\necho hello {{WHO}} and {{NOBODY}}`,
    );
    await trustProject(client, repo.root);

    const spawned = await client.request("spawn", { projectRoot: repo.root, root: true, template: "greet", vars: { WHO: "pu" } });
    trackAgentPid(spawned.agent.pid);
    expect(spawned.agent.command).toBe(FAKE_AGENT_COMMAND);
    expect(spawned.agent.prompt).toBe("echo hello pu and {{NOBODY}}");
    expect(spawned.warnings.join("\n")).toMatch(/\{\{NOBODY\}\}/);
    expect(spawned.warnings.join("\n")).not.toMatch(/WHO/);
    await waitFor("the rendered prompt to be typed", async () => (await logText(client, spawned.agentId)).includes("\nhello pu and {{NOBODY}}"));

    await expect(client.request("spawn", { projectRoot: repo.root, root: true, template: "absent" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });
});
