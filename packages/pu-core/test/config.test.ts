import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  BUILTIN_AGENT_TYPES,
  DEFAULT_CONFIG_YAML,
  loadConfig,
  parseConfig,
  projectConfigWarnings,
  resolveAgentType,
} from "../src/config.js";
import { isPuError } from "../src/errors.js";
import { configPath } from "../src/paths.js";

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "pu-config-"));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

async function writeConfig(text: string): Promise<void> {
  mkdirSync(join(root, ".pu"), { recursive: true });
  writeFileSync(configPath(root), text);
}

async function configError(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isPuError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a PuError");
}

describe("loadConfig", () => {
  it("gives defaults when there is no config file", async () => {
    const config = await loadConfig(root, { SHELL: "/bin/bash" });
    expect(config.defaultAgent).toBe("claude");
    expect(config.envFiles).toEqual([]);
    expect(config.idleThresholdSeconds).toBe(30);
    expect(config.outputBufferBytes).toBe(1024 * 1024);
    expect(config.defaultTrigger).toBeUndefined();
    expect(Object.keys(config.agents).sort()).toEqual(["claude", "codex", "opencode", "terminal"]);
    expect(config.agents.terminal?.command).toBe("/bin/bash");
  });

  it("reads the default file `pu init` writes as the defaults", async () => {
    await writeConfig(DEFAULT_CONFIG_YAML);
    expect(await loadConfig(root, {})).toEqual(await loadConfig(join(root, "elsewhere"), {}));
  });

  it("reads settings, custom agent types and tweaks to built-ins", async () => {
    await writeConfig(
      [
        "defaultAgent: aider",
        "envFiles: [.env, .env.local]",
        "idleThresholdSeconds: 12",
        "defaultTrigger: review",
        "agents:",
        "  aider:",
        "    command: aider",
        "    promptFlag: --message",
        "    interactive: false",
        "  shell-bot:",
        "    command: /usr/bin/bot",
        "  claude:",
        "    launchArgs: [--model, opus]",
      ].join("\n"),
    );
    const config = await loadConfig(root, {});
    expect(config.defaultAgent).toBe("aider");
    expect(config.envFiles).toEqual([".env", ".env.local"]);
    expect(config.idleThresholdSeconds).toBe(12);
    expect(config.defaultTrigger).toBe("review");
    expect(resolveAgentType(config, "aider")).toEqual({
      command: "aider",
      promptFlag: "--message",
      interactive: false,
      launchArgs: [],
    });
    expect(resolveAgentType(config, "shell-bot")).toEqual({ command: "/usr/bin/bot", interactive: true, launchArgs: [] });
    expect(resolveAgentType(config, "claude")).toEqual({ ...BUILTIN_AGENT_TYPES.claude, launchArgs: ["--model", "opus"] });
  });

  it("reports bad YAML with the file and line", async () => {
    await writeConfig("defaultAgent: claude\nagents: [unclosed\n");
    const error = await configError(loadConfig(root));
    expect(error.code).toBe("CONFIG_ERROR");
    expect(error.message).toContain(configPath(root));
    expect(error.message).toMatch(/not valid YAML: line \d+/);
  });

  it.each([
    ["idleThresholdSeconds: soon", "idleThresholdSeconds"],
    ["envFiles: .env", "envFiles"],
    ["agents:\n  custom:\n    promptFlag: -p", "agents.custom.command"],
    ["agents:\n  custom:\n    command: x\n    launchArgs: [1, 2]", "agents.custom.launchArgs.0"],
    ["defaultAgent: nosuch", "defaultAgent"],
  ])("names the bad field in %j", async (text, field) => {
    await writeConfig(text);
    const error = await configError(loadConfig(root));
    expect(error.code).toBe("CONFIG_ERROR");
    expect(error.message).toContain(configPath(root));
    expect(error.message).toContain(`${field}:`);
  });

  it.each(["99999999999999", "100"])("outputBufferBytes: %s is a config error naming the field and the allowed range", async (value) => {
    await writeConfig(`outputBufferBytes: ${value}`);
    const error = await configError(loadConfig(root));
    expect(error.code).toBe("CONFIG_ERROR");
    expect(error.message).toContain("outputBufferBytes: must be between 4096 and 268435456 bytes (4 KiB to 256 MiB)");
  });

  it("rejects a top level that is not a mapping", async () => {
    await writeConfig("- a\n- b\n");
    expect((await configError(loadConfig(root))).code).toBe("CONFIG_ERROR");
  });

  it("a file an editor has just truncated is read again once it is written, not taken for defaults", async () => {
    await writeConfig("");
    // The editor's write lands after the read has already seen the empty file.
    const written = new Promise<void>((resolve) => setTimeout(() => resolve(writeFileSync(configPath(root), "defaultAgent: codex\nqueue:\n  maxPerProject: 1\n")), 60));
    const config = await loadConfig(root, {});
    await written;
    expect(config.defaultAgent).toBe("codex");
    expect(config.queue?.maxPerProject).toBe(1);
  });

  it("a file that was emptied a while ago, or stays empty, is the defaults", async () => {
    await writeConfig("");
    const past = new Date(Date.now() - 60_000);
    utimesSync(configPath(root), past, past);
    expect((await loadConfig(root, {})).defaultAgent).toBe("claude");
    await writeConfig("");
    expect((await loadConfig(root, {})).defaultAgent).toBe("claude");
  });
});

describe("built-in agent types", () => {
  it("launch the way each tool expects", () => {
    const config = parseConfig("", "c", { SHELL: "/bin/zsh" });
    expect(resolveAgentType(config, "claude")).toMatchObject({
      command: "claude",
      interactive: true,
      resumeArgs: ["--resume", "{sessionId}"],
    });
    expect(resolveAgentType(config, "codex")).toMatchObject({ command: "codex", interactive: false });
    expect(resolveAgentType(config, "codex").promptFlag).toBeUndefined();
    expect(resolveAgentType(config, "codex").resumeArgs).toEqual(["resume", "--last"]);
    expect(resolveAgentType(config, "opencode")).toMatchObject({ promptFlag: "--prompt", resumeArgs: ["--continue"] });
    expect(resolveAgentType(config, "terminal")).toMatchObject({ command: "/bin/zsh", interactive: true });
    expect(resolveAgentType(parseConfig("", "c", {}), "terminal").command).toBe("/bin/sh");
  });

  it("an unknown agent type is an INVALID_ARGUMENT listing the known ones", () => {
    const config = parseConfig("", "c", {});
    try {
      resolveAgentType(config, "gpt-9");
      throw new Error("expected a PuError");
    } catch (error) {
      expect(isPuError(error) && error.code).toBe("INVALID_ARGUMENT");
      expect((error as Error).message).toContain("unknown agent type 'gpt-9'");
      expect((error as Error).message).toContain("terminal");
    }
  });
});

describe("project settings only $PU_HOME decides", () => {
  it("a project's queue.maxParallel is named as having no effect; maxPerProject is the project's own", () => {
    const config = parseConfig("queue:\n  maxParallel: 2\n  maxPerProject: 1\n", "/p/.pu/config.yaml");
    expect(projectConfigWarnings(config, "/p/.pu/config.yaml", "/h/config.yaml")).toEqual([
      "/p/.pu/config.yaml: queue.maxParallel has no effect here; it is read from /h/config.yaml only",
    ]);
    expect(projectConfigWarnings(parseConfig("queue:\n  maxPerProject: 1\n", "/p/.pu/config.yaml"), "/p/.pu/config.yaml", "/h/config.yaml")).toEqual([]);
  });

  it("maxParallel: 0 is an error naming the file and the field, never replaced by a default", () => {
    expect(() => parseConfig("queue:\n  maxParallel: 0\n", "/h/config.yaml")).toThrow(/^config \/h\/config\.yaml: queue\.maxParallel: /);
  });
});
