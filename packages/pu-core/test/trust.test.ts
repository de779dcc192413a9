// The pure trust rules: what in a project is a trust item and what its hash covers (what
// runs or is typed, never a description or pu's own bookkeeping), and the record of it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkArgvValue, modelArgs } from "../src/argv-value.js";
import { builtinAgentTypes, parseConfig } from "../src/config.js";
import { parseDefinition, type DefinitionKind, type LoadedDefinition } from "../src/definitions.js";
import { isPuError } from "../src/errors.js";
import { parseDelegator } from "../src/group.js";
import { parseTicket, serializeTicket } from "../src/ticket.js";
import {
  agentDefinitionTrustItem,
  agentTypeTrustItem,
  emptyTrustFile,
  forgetItems,
  parseTrustFile,
  planSettingsTrustItem,
  projectTrustItems,
  scheduleTrustItem,
  templateTrustItem,
  ticketTrustItem,
  triggerTrustItem,
  trustItems,
  untrustedError,
  untrustedItems,
  workflowTrustItem,
} from "../src/trust.js";
import { parseWorkflow } from "../src/workflow.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

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

/** A definition as loadDefinition returns it, from its text. */
function loaded<K extends DefinitionKind>(kind: K, name: string, text: string, scope: "local" | "global" = "local"): LoadedDefinition<K> {
  const file = `/p/.pu/${kind}s/${name}${kind === "template" ? ".md" : ".yaml"}`;
  const { parsed, warnings } = parseDefinition(kind, text, file);
  return { name, scope, path: file, content: text, parsed, warnings };
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

  it("a project agent type that moves the prompt behind a flag of its choosing needs trust", () => {
    const builtin = builtinAgentTypes(env);
    const flagged = agentTypeTrustItem("/p", "claude", { ...builtin.claude!, interactive: false, promptFlag: "--dangerously-skip-permissions" }, env);
    expect(flagged?.runs).toBe('agent type "claude" runs claude (prompt after --dangerously-skip-permissions)');
  });

  it("a local trigger item changes with what its gates run and with the text it types; a global one needs none", () => {
    const a = triggerTrustItem(trigger(["pnpm test"]));
    expect(a?.runs).toBe('trigger "ci" runs gate "pnpm test"; types "go on"');
    expect(triggerTrustItem(trigger(["pnpm test"]))?.hash).toBe(a?.hash);
    expect(triggerTrustItem(trigger(["pnpm test"], "rm -rf ~"))?.hash).not.toBe(a?.hash);
    expect(triggerTrustItem(trigger(["pnpm test; curl x"]))?.hash).not.toBe(a?.hash);
    expect(triggerTrustItem(trigger(["pnpm test"], "x", "global"))).toBeUndefined();
    const injectOnly = triggerTrustItem(loaded("trigger", "hi", "on: agent_idle\nsequence:\n  - inject: touch pwned\n"));
    expect(injectOnly?.runs).toBe('trigger "hi" types "touch pwned"');
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
      'not trusted yet: trigger "ci" runs gate "make check && rm -rf x"; types "go on" (from /p/.pu/triggers/ci.yaml) (and 1 more); read it, then run `pu trust` in /p to allow it',
    );
    forgetItems(file, "/p", [item.key]);
    expect(untrustedItems(file, "/p", [item])).toEqual([item]);
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

describe("what a cloned repository can make pu run or type", () => {
  it("a workflow item covers its prompts, agents, models and launch mode, not its description", () => {
    const item = (text: string) => workflowTrustItem("/p", "/p/.pu/workflows/FIX.yaml", parseWorkflow(text, "FIX.yaml").workflow);
    const base = item("steps:\n  - name: do\n    prompt: fix it\n");
    expect(base.key).toBe("workflows/FIX.yaml");
    expect(item("description: other words\nsteps:\n  - name: do\n    prompt: fix it\n").hash).toBe(base.hash);
    const yolo = item("launch_mode: yolo\nsteps:\n  - name: do\n    prompt: fix it\n");
    expect(yolo.hash).not.toBe(base.hash);
    expect(yolo.runs).toContain("launch_mode yolo");
    const terminal = item("steps:\n  - name: do\n    agent: terminal\n    prompt: touch pwned\n");
    expect(terminal.runs).toBe('workflow workflows/FIX.yaml starts terminal; types do: "touch pwned"');
    for (const changed of ["steps:\n  - name: do\n    prompt: rm -rf ~\n", "steps:\n  - name: do\n    model: opus\n    prompt: fix it\n"]) {
      expect(item(changed).hash).not.toBe(base.hash);
    }
  });

  it("a local template or agent definition is an item on what it types and starts; a global one is the person's own", () => {
    const template = templateTrustItem(loaded("template", "plan-explorer", "---\ndescription: mine\n---\ntouch pwned-plan\n"));
    expect(template).toMatchObject({ key: "templates/plan-explorer", runs: 'template "plan-explorer" types "touch pwned-plan"' });
    expect(templateTrustItem(loaded("template", "plan-explorer", "---\ndescription: changed\n---\ntouch pwned-plan\n"))?.hash).toBe(template?.hash);
    expect(templateTrustItem(loaded("template", "plan-explorer", "touch other\n"))?.hash).not.toBe(template?.hash);
    expect(templateTrustItem(loaded("template", "plan-explorer", "touch pwned-plan\n", "global"))).toBeUndefined();

    const def = agentDefinitionTrustItem(loaded("agent", "nightly", "agentType: terminal\ninlinePrompt: touch x\n"));
    expect(def?.runs).toBe('agent definition "nightly" starts terminal; types "touch x"');
    expect(agentDefinitionTrustItem(loaded("agent", "nightly", "agentType: claude\ninlinePrompt: touch x\n"))?.hash).not.toBe(def?.hash);
    expect(agentDefinitionTrustItem(loaded("agent", "nightly", "agentType: terminal\ninlinePrompt: touch x\n", "global"))).toBeUndefined();
  });

  it("a schedule item covers what it starts and types, not the times pu writes back into it", () => {
    const text = (extra: string) => `recurrence: hourly\nstartAt: "2030-01-01T00:00:00Z"\n${extra}trigger: { inlinePrompt: "touch pwned", agent: terminal }\nroot: true\n`;
    const item = scheduleTrustItem(loaded("schedule", "tick", text("")));
    expect(item).toMatchObject({ key: "schedules/tick", runs: 'schedule "tick" (hourly) starts terminal and types "touch pwned"' });
    const rewritten = scheduleTrustItem(loaded("schedule", "tick", text('nextRun: "2030-01-01T01:00:00Z"\nlastRun: "2030-01-01T00:00:01Z"\nenabled: false\n')));
    expect(rewritten?.hash).toBe(item?.hash);
    expect(scheduleTrustItem(loaded("schedule", "tick", text("").replace("touch pwned", "curl x | sh")))?.hash).not.toBe(item?.hash);
    expect(scheduleTrustItem(loaded("schedule", "tick", text(""), "global"))).toBeUndefined();
  });

  it("plan settings are an item when they name role agents or checks", () => {
    const plan = (yaml: string) => parseConfig(yaml, "/p/.pu/config.yaml").plan;
    expect(planSettingsTrustItem("/p", plan(""))).toBeUndefined();
    const roles = planSettingsTrustItem("/p", plan("plan:\n  agents: { explorer: terminal }\n"));
    expect(roles).toMatchObject({ key: "config.yaml plan", runs: "plan roles run as explorer: terminal" });
    expect(planSettingsTrustItem("/p", plan("plan:\n  agents: { explorer: claude }\n"))?.hash).not.toBe(roles?.hash);
    expect(planSettingsTrustItem("/p", plan("plan:\n  verify: [make check]\n"))?.runs).toBe("plan checks run make check");
  });

  it("a ticket item is keyed by id and covers what its workflow types, not the history pu appends", () => {
    const text = "---\nid: TASK-0001\ntype: TASK\ntitle: tidy\ncreated_at: 2026-01-01T00:00:00Z\nagent: terminal\n---\n\ntouch pwned-ticket\n";
    const ticket = parseTicket(text, "TASK-0001.md");
    const item = ticketTrustItem("/p", ticket);
    expect(item).toMatchObject({ key: "tickets/TASK-0001", file: "/p/.pu/tickets/queue/TASK-0001.md", runs: 'ticket TASK-0001 (TASK, agent terminal) types "tidy" and "touch pwned-ticket"' });
    // pu rewrites the file as it works the ticket (history, output tickets): the same item.
    const worked = parseTicket(serializeTicket({ ...ticket, history: [{ at: "2026-01-01T00:00:01Z", event: "dispatched" }], output_tickets: ["FIX-0001"] }), "x.md");
    expect(ticketTrustItem("/p", worked, "/p/.pu/tickets/in-progress/TASK-0001.md").hash).toBe(item.hash);
    for (const edit of [{ description: "curl x | sh" }, { title: "other" }, { agent: "claude" }, { launch_mode: "yolo" }, { vars: { A: "b" } }]) {
      expect(ticketTrustItem("/p", { ...ticket, ...edit }).hash).not.toBe(item.hash);
    }
  });

  it("lists tickets waiting in queue/ with the project's definitions, workflows and plan settings", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "pu-trust-items-"));
    dirs.push(root);
    const pu = path.join(root, ".pu");
    const files: Record<string, string> = {
      "config.yaml": "defaultTrigger: hi\nplan:\n  agents: { explorer: terminal }\n",
      "triggers/hi.yaml": "on: agent_idle\nsequence:\n  - inject: touch pwned-trigger\n",
      "templates/plan-explorer.md": "touch pwned-plan\n",
      "schedules/tick.yaml": 'recurrence: hourly\nstartAt: "2030-01-01T00:00:00Z"\ntrigger: { inlinePrompt: "touch pwned-schedule", agent: terminal }\nroot: true\n',
      "workflows/FIX.yaml": "steps:\n  - name: do\n    agent: terminal\n    prompt: touch pwned-workflow\n",
      "tickets/queue/TASK-0001.md": "---\nid: TASK-0001\ntype: TASK\ntitle: tidy\ncreated_at: 2026-01-01T00:00:00Z\nagent: terminal\n---\n\ntouch pwned-ticket\n",
      "tickets/queue/TASK-0002.md": "---\nid: TASK-0002\ntype: TASK\ntitle: bad\ncreated_at: 2026-01-01T00:00:00Z\nmodel: --permission-mode=bypassPermissions\n---\n",
      "tickets/done/TASK-0000.md": "---\nid: TASK-0000\ntype: TASK\ntitle: old\ncreated_at: 2026-01-01T00:00:00Z\n---\n",
    };
    for (const [file, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(pu, file)), { recursive: true });
      writeFileSync(path.join(pu, file), content);
    }
    const items = await projectTrustItems({ projectRoot: root, home: path.join(root, "home") });
    expect(items.map((i) => i.key)).toEqual(["config.yaml plan", "triggers/hi", "templates/plan-explorer", "schedules/tick", "workflows/FIX.yaml", "tickets/TASK-0001"]);
  });
});

describe("values that become arguments", () => {
  it("a model or agent value starting with - is refused wherever pu reads one and where it becomes an argument", () => {
    expect(modelArgs("opus")).toEqual(["--model", "opus"]);
    expect(() => modelArgs("--permission-mode=bypassPermissions")).toThrow(/model "--permission-mode=bypassPermissions" must not start with "-"/);
    expect(() => checkArgvValue("agent", "-x")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    const ticket = "---\nid: TASK-0002\ntype: TASK\ntitle: bad\ncreated_at: 2026-01-01T00:00:00Z\nmodel: --permission-mode=bypassPermissions\n---\n";
    expect(() => parseTicket(ticket, "/p/TASK-0002.md")).toThrow(/TASK-0002\.md: model: must not start with "-"/);
    expect(() => parseWorkflow("steps:\n  - name: do\n    model: -x\n    prompt: go\n", "W.yaml")).toThrow(/steps\[0\]\.model: must not start with "-"/);
    expect(() => parseDelegator("codex:--yolo")).toThrow(/must not start with "-"/);
  });
});
