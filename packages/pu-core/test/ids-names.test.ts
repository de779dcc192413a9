import { describe, expect, it } from "vitest";
import { exitCodeFor, isPuError, PuError } from "../src/errors.js";
import {
  isAgentId,
  isSessionId,
  isWorktreeId,
  newAgentId,
  newSessionId,
  newWorktreeId,
} from "../src/ids.js";
import { branchForWorktree, escapeControlCharacters, normalizeWorktreeName, validateAgentName, validateDefinitionName } from "../src/names.js";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isPuError(error) ? error.code : "not a PuError";
  }
  return undefined;
}

describe("ids", () => {
  it("makes well-formed, distinct ids", () => {
    const worktreeIds = new Set(Array.from({ length: 2000 }, newWorktreeId));
    const agentIds = new Set(Array.from({ length: 2000 }, newAgentId));
    expect(worktreeIds.size).toBe(2000);
    expect(agentIds.size).toBe(2000);
    for (const id of worktreeIds) expect(id).toMatch(/^wt-[a-z0-9]{8}$/);
    for (const id of agentIds) expect(id).toMatch(/^ag-[a-z0-9]{8}$/);
  });

  it("uses the whole alphabet", () => {
    const seen = new Set(Array.from({ length: 500 }, () => newAgentId().slice(3)).join(""));
    expect(seen.size).toBe(36);
  });

  it("recognizes ids and rejects look-alikes", () => {
    expect(isWorktreeId(newWorktreeId())).toBe(true);
    expect(isAgentId(newAgentId())).toBe(true);
    expect(isSessionId(newSessionId())).toBe(true);
    for (const bad of ["wt-ABC12345", "wt-abc1234", "wt-abc123456", "ag-abc12345", " wt-abc12345"]) {
      expect(isWorktreeId(bad)).toBe(false);
    }
    expect(isAgentId("wt-abc12345")).toBe(false);
    expect(isSessionId("550e8400-e29b-41d4-a716-446655440000")).toBe(true);
    expect(isSessionId("550e8400-e29b-11d4-a716-446655440000")).toBe(false);
  });
});

describe("normalizeWorktreeName", () => {
  it.each([
    ["Fix Auth", "fix-auth"],
    ["fix_auth_bug", "fix-auth-bug"],
    ["  --Fix   the  BUG!!--  ", "fix-the-bug"],
    ["feature/login.v2", "featureloginv2"],
    ["a - _ b", "a-b"],
    ["Ünïcode ok", "ncode-ok"],
    ["issue #42", "issue-42"],
  ])("%j → %j", (raw, expected) => {
    expect(normalizeWorktreeName(raw)).toBe(expected);
  });

  it("caps the length at 64 without a trailing dash", () => {
    expect(normalizeWorktreeName("a".repeat(100))).toBe("a".repeat(64));
    expect(normalizeWorktreeName(`${"b".repeat(63)} tail`)).toBe("b".repeat(63));
  });

  it("refuses a name with nothing usable, quoting it", () => {
    expect(codeOf(() => normalizeWorktreeName("!!! ___ ---"))).toBe("INVALID_ARGUMENT");
    expect(() => normalizeWorktreeName("")).toThrow("worktree name '' has no usable characters");
    expect(() => normalizeWorktreeName("日本")).toThrow("worktree name '日本' has no usable characters");
  });

  it("branches live under pu/", () => {
    expect(branchForWorktree("fix-auth")).toBe("pu/fix-auth");
  });
});

describe("validateDefinitionName", () => {
  it("accepts ordinary names", () => {
    expect(validateDefinitionName("review")).toBe("review");
    expect(validateDefinitionName("fix-tests_v2.1")).toBe("fix-tests_v2.1");
  });

  it.each(["", "  ", ".hidden", "a/b", "a\\b", "..", "a..b", "x\0y"])("rejects %j", (name) => {
    expect(codeOf(() => validateDefinitionName(name))).toBe("INVALID_ARGUMENT");
  });
});

describe("control characters in names", () => {
  it("agent and definition names with escape sequences or newlines are refused, naming the character and where it is", () => {
    for (const validate of [validateAgentName, validateDefinitionName]) {
      expect(() => validate("ok\x1b[2Jname")).toThrow(/control character \\x1b at position 3/);
      expect(() => validate("two\nlines")).toThrow(/control character \\x0a at position 4/);
      expect(() => validate("del\x7f")).toThrow(/\\x7f/);
    }
    expect(validateAgentName("  Reviewer (ünïcode ok)  ")).toBe("Reviewer (ünïcode ok)");
  });

  it("escapeControlCharacters shows them as \\xNN and leaves other text alone", () => {
    expect(escapeControlCharacters("a\x1b[31mb\x07é")).toBe("a\\x1b[31mb\\x07é");
  });
});

describe("errors", () => {
  it("maps codes to exit statuses", () => {
    expect(exitCodeFor("AGENT_NOT_FOUND")).toBe(3);
    expect(exitCodeFor("WORKTREE_NOT_FOUND")).toBe(3);
    expect(exitCodeFor("NOT_FOUND")).toBe(3);
    expect(exitCodeFor("NOT_INITIALIZED")).toBe(3);
    expect(exitCodeFor("DAEMON_UNAVAILABLE")).toBe(4);
    expect(exitCodeFor("PROTOCOL_MISMATCH")).toBe(4);
    expect(exitCodeFor("TIMEOUT")).toBe(4);
    expect(exitCodeFor("INVALID_ARGUMENT")).toBe(2);
    expect(exitCodeFor("SPAWN_FAILED")).toBe(1);
    expect(exitCodeFor("INTERNAL")).toBe(1);
  });

  it("PuError carries code, message and cause", () => {
    const cause = new Error("disk full");
    const error = new PuError("IO_ERROR", "cannot write x", { cause });
    expect(error).toBeInstanceOf(Error);
    expect(isPuError(error)).toBe(true);
    expect(isPuError(new Error("plain"))).toBe(false);
    expect(error.code).toBe("IO_ERROR");
    expect(error.cause).toBe(cause);
    expect(error.message).toBe("cannot write x");
  });
});
