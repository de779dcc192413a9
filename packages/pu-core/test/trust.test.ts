import { describe, expect, it } from "vitest";
import { builtinAgentTypes } from "../src/config.js";
import type { LoadedDefinition } from "../src/definitions.js";
import { isPuError } from "../src/errors.js";
import { agentTypeTrustItem, emptyTrustFile, parseTrustFile, triggerTrustItem, trustItems, untrustedError, untrustedItems } from "../src/trust.js";

const env = { SHELL: "/bin/bash" };

function trigger(gates: string[], inject = "go on", scope: "local" | "global" = "local"): LoadedDefinition<"trigger"> {
  return {
    name: "ci",
    scope,
    path: "/p/.pu/triggers/ci.yaml",
    content: "",
    warnings: [],
    parsed: { name: "ci", on: "agent_idle", sequence: gates.map((run) => ({ inject, gate: { run, expect_exit: 0, timeout_seconds: 600 }, max_retries: 0 })) },
  } as unknown as LoadedDefinition<"trigger">;
}

describe("trust items", () => {
  it("a built-in agent type left alone needs no trust; one the project changed or added does", () => {
    const builtin = builtinAgentTypes(env);
    expect(agentTypeTrustItem("/p", "claude", builtin.claude!, env)).toBeUndefined();
    expect(agentTypeTrustItem("/p", "terminal", builtin.terminal!, env)).toBeUndefined();
    const changed = agentTypeTrustItem("/p", "claude", { ...builtin.claude!, command: "curl" }, env);
    expect(changed).toMatchObject({ key: "config.yaml agents.claude", file: "/p/.pu/config.yaml", runs: 'agent type "claude" runs curl' });
    const added = agentTypeTrustItem("/p", "mine", { command: "sh", interactive: true, launchArgs: ["-c", "x"] }, env);
    expect(added?.runs).toBe('agent type "mine" runs sh -c x');
  });

  it("a trigger item changes with what its gates run, not with its inject text; global or gate-less triggers need none", () => {
    const a = triggerTrustItem(trigger(["pnpm test"]));
    expect(triggerTrustItem(trigger(["pnpm test"], "other words"))?.hash).toBe(a?.hash);
    expect(triggerTrustItem(trigger(["pnpm test; curl x"]))?.hash).not.toBe(a?.hash);
    expect(triggerTrustItem(trigger([]))).toBeUndefined();
    expect(triggerTrustItem(trigger(["pnpm test"], "x", "global"))).toBeUndefined();
  });

  it("trusting records each item per project; a changed item is untrusted again", () => {
    const file = emptyTrustFile();
    const item = triggerTrustItem(trigger(["make check"]))!;
    expect(untrustedItems(file, "/p", [item, undefined])).toEqual([item]);
    trustItems(file, "/p", [item]);
    expect(untrustedItems(file, "/p", [item])).toEqual([]);
    expect(untrustedItems(file, "/other", [item])).toEqual([item]);
    const changed = triggerTrustItem(trigger(["make check && rm -rf x"]))!;
    expect(untrustedItems(file, "/p", [changed])).toEqual([changed]);
    const error = untrustedError("/p", [changed, item]);
    expect(error.code).toBe("UNTRUSTED");
    expect(error.message).toBe(
      'not trusted yet: trigger "ci" runs gate "make check && rm -rf x" (from /p/.pu/triggers/ci.yaml) (and 1 more); read it, then run `pu trust` in /p to allow it',
    );
  });

  it("a corrupt trust file is an error naming it, never read as empty", () => {
    for (const text of ["{not json", JSON.stringify({ version: 2, projects: {} })]) {
      try {
        parseTrustFile(text, "/home/.pu/trust.json");
        expect.unreachable();
      } catch (error) {
        expect(isPuError(error) && error.code === "CONFIG_ERROR").toBe(true);
        expect((error as Error).message).toContain("/home/.pu/trust.json");
      }
    }
  });
});
