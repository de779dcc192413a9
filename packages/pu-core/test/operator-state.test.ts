import { describe, expect, it } from "vitest";
import { isPuError } from "../src/errors.js";
import { emptyOperatorState, parseOperatorState, recordUsage, serializeOperatorState } from "../src/operator-state.js";

// Every field of the seed's schema, as an Operator state file would hold them.
const FULL = {
  paused: true,
  agents: [
    {
      id: "ag-abc12345",
      ticket_id: "FEAT-0007",
      ticket_type: "FEAT",
      project: "/src/app",
      status: "awaiting_input",
      started_at: "2026-11-23T01:00:00Z",
      last_activity: "2026-11-23T01:05:00Z",
      last_message: "waiting for plan review",
      paired: false,
      session_name: "ag-abc12345",
      session_wrapper: "pu",
      session_window_ref: null,
      session_context_ref: "wt-abc12345",
      session_pane_ref: null,
      content_hash: "9f2c",
      current_step: "plan",
      step_started_at: "2026-11-23T01:01:00Z",
      last_content_change: "2026-11-23T01:04:00Z",
      pr_url: null,
      pr_number: null,
      github_repo: null,
      pr_status: null,
      completed_steps: ["triage"],
      llm_tool: "claude",
      llm_model: "opus",
      launch_mode: "default",
      review_state: "pending_plan",
      dev_server_pid: null,
      worktree_path: "/src/app/.pu/worktrees/wt-abc12345",
    },
  ],
  completed: [
    { ticket_id: "FIX-0003", ticket_type: "FIX", project: "/src/app", summary: "fixed", completed_at: "2026-11-22T10:00:00Z", pr_url: null, output_tickets: ["TASK-0004"] },
  ],
  project_llm_stats: {
    "/src/app": {
      project: "/src/app",
      preferred_tool: "codex",
      preferred_model: null,
      tool_usage: {
        claude: {
          tool: "claude",
          ticket_count: 2,
          success_count: 1,
          failure_count: 1,
          total_time_secs: 300,
          last_used: "2026-11-22T10:00:00Z",
          model_usage: { opus: { model: "opus", ticket_count: 2, success_count: 1, failure_count: 1, total_time_secs: 300 } },
        },
      },
      updated_at: "2026-11-22T10:00:00Z",
    },
  },
  project_collection_prefs: { "/src/app": "default" },
  multi_agent_groups: [
    {
      group_id: "grp-1",
      ticket_id: "FEAT-0007",
      step_name: "implement",
      step_type: "multi_model",
      agent_ids: ["ag-1"],
      phase: "running",
      individual_outputs: { claude: { summary: "done" } },
      aggregated_output: null,
      expected_total: 2,
      pending_launches: [{ delegator_name: "codex", prompt: "do it", variant_key: "codex" }],
      agent_variant_keys: { "ag-1": "claude" },
    },
  ],
  written_by_a_newer_pu: { kept: true },
};

describe("operator state.json", () => {
  it("reads every field of the seed and writes it back unchanged, unknown keys included", () => {
    const text = JSON.stringify(FULL, null, 2) + "\n";
    const state = parseOperatorState(text, "/home/.pu/state.json");
    expect(state.agents[0]?.review_state).toBe("pending_plan");
    expect(serializeOperatorState(state)).toBe(text);
  });

  it("a corrupt or wrong-shaped file is INVALID_STATE naming the file and the fields", () => {
    for (const [text, part] of [
      ["{not json", "not valid JSON"],
      [JSON.stringify({ ...FULL, paused: "yes", agents: [{ ...FULL.agents[0], paired: 1 }] }), "paused: "],
    ] as const) {
      try {
        parseOperatorState(text, "/home/.pu/state.json");
        expect.unreachable();
      } catch (error) {
        expect(isPuError(error) && error.code === "INVALID_STATE").toBe(true);
        expect((error as Error).message).toContain("/home/.pu/state.json: ");
        expect((error as Error).message).toContain(part);
      }
    }
    expect(() => parseOperatorState(JSON.stringify({ ...FULL, agents: [{ ...FULL.agents[0], paired: 1 }] }), "s.json")).toThrow(/agents\[0\]\.paired: /);
  });

  it("recordUsage counts runs, successes, failures and seconds per project, tool and model", () => {
    const state = emptyOperatorState();
    const at = new Date("2026-11-23T02:00:00Z");
    recordUsage(state, { project: "/p", tool: "codex", model: "gpt-5", succeeded: true, seconds: 61.4, at });
    recordUsage(state, { project: "/p", tool: "codex", model: "default", succeeded: false, seconds: 9.6, at });
    const codex = state.project_llm_stats?.["/p"]?.tool_usage?.codex;
    expect(codex).toMatchObject({ tool: "codex", ticket_count: 2, success_count: 1, failure_count: 1, total_time_secs: 71, last_used: at.toISOString() });
    expect(codex?.model_usage?.["gpt-5"]).toEqual({ model: "gpt-5", ticket_count: 1, success_count: 1, total_time_secs: 61 });
    expect(codex?.model_usage?.default).toEqual({ model: "default", ticket_count: 1, failure_count: 1, total_time_secs: 10 });
    // What it writes is a valid state file.
    expect(parseOperatorState(serializeOperatorState(state), "s.json")).toEqual(state);
  });

  it("recordUsage adds the tokens and cost a run's CLI recorded as optional fields; a run without a price counts apart", () => {
    const state = emptyOperatorState();
    const at = new Date("2026-11-26T02:00:00Z");
    const tokens = { input: 100, output: 20, cacheRead: 300, cacheWrite: 40, costUsd: 0.5 };
    recordUsage(state, { project: "/p", tool: "claude", model: "default", succeeded: true, seconds: 10, at, tokens });
    recordUsage(state, { project: "/p", tool: "claude", model: "default", succeeded: true, seconds: 10, at, tokens: { ...tokens, costUsd: null } });
    // A run whose CLI left no record adds its count only.
    recordUsage(state, { project: "/p", tool: "claude", model: "default", succeeded: true, seconds: 10, at });
    const model = state.project_llm_stats?.["/p"]?.tool_usage?.claude?.model_usage?.default;
    expect(model).toEqual({
      model: "default",
      ticket_count: 3,
      success_count: 3,
      total_time_secs: 30,
      input_tokens: 200,
      output_tokens: 40,
      cache_read_tokens: 600,
      cache_write_tokens: 80,
      cost_usd: 0.5,
      cost_unknown_count: 1,
    });
    expect(parseOperatorState(serializeOperatorState(state), "s.json")).toEqual(state);
  });
});

