// Throw-away homes for the real agent CLIs, each pointed at the test model server, with
// every first-run dialog (onboarding, API key, trust, update checks) already answered.
// The returned environment is what the agent process needs; it replaces the user's HOME,
// so nothing of the real machine's Claude, Codex or OpenCode setup is read or written.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export type RealAgent = "claude" | "codex" | "opencode";

/** Where pnpm links the pinned CLIs (`tests/package.json` devDependencies). */
const REAL_AGENT_BIN_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../node_modules/.bin");

/** The model name every CLI is configured with; the server answers whatever model is asked for. */
const FAKE_MODEL = "fake-model";

export interface AgentHome {
  agent: RealAgent;
  /** The directory that stands in for HOME (and CODEX_HOME / XDG_CONFIG_HOME below it). */
  dir: string;
  /**
   * Variables for the agent's process. `undefined` means "remove": API keys and other
   * sessions' variables from the surrounding environment must not reach the agent.
   */
  env: Record<string, string | undefined>;
}

export interface HomeOptions {
  /** An empty directory to become the home. */
  dir: string;
  /** The model server's base URL (`http://127.0.0.1:PORT`, no `/v1`). */
  serverUrl: string;
  /** Absolute directories the CLI must treat as trusted projects (no trust dialog). */
  trustedDirs: string[];
}

// Variables of the machine's own agent setup that would send a CLI elsewhere.
const FOREIGN = {
  ANTHROPIC_API_KEY: undefined,
  ANTHROPIC_MODEL: undefined,
  CLAUDE_CONFIG_DIR: undefined,
  CLAUDECODE: undefined,
  CLAUDE_CODE_ENTRYPOINT: undefined,
  OPENAI_API_KEY: undefined,
  OPENAI_BASE_URL: undefined,
  CODEX_SANDBOX: undefined,
  OPENCODE_CONFIG: undefined,
  OPENCODE_CONFIG_DIR: undefined,
  OPENCODE_CONFIG_CONTENT: undefined,
};

/** Only the model server (on 127.0.0.1) is reached directly. */
const DEAD_PROXY = { HTTPS_PROXY: "http://127.0.0.1:9", HTTP_PROXY: "http://127.0.0.1:9", NO_PROXY: "127.0.0.1,localhost", https_proxy: undefined, http_proxy: undefined, no_proxy: undefined };

function basics(dir: string): Record<string, string | undefined> {
  return {
    ...FOREIGN,
    // Whatever a CLI reaches for beyond the model server (Claude Code asks downloads.claude.ai
    // and github.com as it starts) fails at once through a proxy nothing listens on, with no
    // name looked up: a slow resolver once held a fresh Claude's start for minutes.
    ...DEAD_PROXY,
    HOME: dir,
    XDG_CONFIG_HOME: path.join(dir, ".config"),
    XDG_DATA_HOME: path.join(dir, ".local/share"),
    XDG_STATE_HOME: path.join(dir, ".local/state"),
    XDG_CACHE_HOME: path.join(dir, ".cache"),
    PATH: `${REAL_AGENT_BIN_DIR}${path.delimiter}${process.env.PATH ?? "/usr/bin:/bin"}`,
  };
}

function writeJson(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Claude Code: `~/.claude.json` marks onboarding done and each project's trust dialog
 * accepted; `~/.claude/settings.json` allows the Bash tool (so a scripted RUN needs no
 * permission dialog, also after `--resume`). `ANTHROPIC_AUTH_TOKEN` (not an API key)
 * keeps the "use this API key?" dialog away.
 */
function claudeHome({ dir, serverUrl, trustedDirs }: HomeOptions): AgentHome {
  const projects = Object.fromEntries(trustedDirs.map((d) => [d, { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true }]));
  writeJson(path.join(dir, ".claude.json"), { hasCompletedOnboarding: true, numStartups: 1, projects });
  writeJson(path.join(dir, ".claude/settings.json"), { permissions: { allow: ["Bash"] } });
  return {
    agent: "claude",
    dir,
    env: {
      ...basics(dir),
      ANTHROPIC_BASE_URL: serverUrl,
      ANTHROPIC_AUTH_TOKEN: "test-model-server",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
  };
}

/** TOML basic string: JSON's escaping is a subset TOML accepts for these values. */
const toml = (value: string) => JSON.stringify(value);

/**
 * Codex: `$CODEX_HOME/config.toml` with a custom Responses-API provider (`wire_api =
 * "chat"` is refused by this version, and the built-in provider ignores OPENAI_BASE_URL),
 * trusted projects, and no detached `codex app-server` (`daemon_auto_start = false`).
 */
function codexHome({ dir, serverUrl, trustedDirs }: HomeOptions): AgentHome {
  const codexDir = path.join(dir, ".codex");
  mkdirSync(codexDir, { recursive: true });
  const lines = [
    `model = ${toml(FAKE_MODEL)}`,
    `model_provider = "fake"`,
    "",
    "[model_providers.fake]",
    `name = "Test model server"`,
    `base_url = ${toml(`${serverUrl}/v1`)}`,
    `wire_api = "responses"`,
    "",
    "[features]",
    "daemon_auto_start = false",
    "",
    ...trustedDirs.flatMap((d) => [`[projects.${toml(d)}]`, `trust_level = "trusted"`, ""]),
  ];
  writeFileSync(path.join(codexDir, "config.toml"), `${lines.join("\n")}\n`);
  return { agent: "codex", dir, env: { ...basics(dir), CODEX_HOME: codexDir } };
}

/**
 * OpenCode: `$XDG_CONFIG_HOME/opencode/opencode.json` with an `@ai-sdk/openai-compatible`
 * provider (bundled in the binary, so nothing is downloaded for it), and the variables that
 * stop model-list fetches, self-updates and LSP downloads.
 */
function opencodeHome({ dir, serverUrl }: HomeOptions): AgentHome {
  writeJson(path.join(dir, ".config/opencode/opencode.json"), {
    $schema: "https://opencode.ai/config.json",
    model: `fake/${FAKE_MODEL}`,
    small_model: `fake/${FAKE_MODEL}`,
    autoupdate: false,
    share: "disabled",
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Test model server",
        options: { baseURL: `${serverUrl}/v1`, apiKey: "test-model-server" },
        models: { [FAKE_MODEL]: { name: "Fake model", tool_call: true } },
      },
    },
  });
  return {
    agent: "opencode",
    dir,
    env: {
      ...basics(dir),
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_SHARE: "1",
      // Without this OpenCode reads the (throw-away) ~/.claude for skills and prompts.
      OPENCODE_DISABLE_CLAUDE_CODE: "1",
    },
  };
}

export function agentHome(agent: RealAgent, options: HomeOptions): AgentHome {
  if (agent === "claude") return claudeHome(options);
  if (agent === "codex") return codexHome(options);
  return opencodeHome(options);
}
