/**
 * A person's requests about what a project's (or `$PU_HOME`'s) definitions make the daemon
 * do: the definitions themselves (list, get, save, delete), a person's spawn with its
 * templates and trigger, swarms, a trigger bound to an agent and its gate log, a schedule
 * switched on or off, the git hooks' gates, and `pu trust`. The handlers only resolve the
 * project and pass the request on; the work is in this folder's modules.
 */
import { PuError } from "@pu/core/errors";
import { deleteDefinition, listDefinitions, loadDefinition, saveDefinition, type DefinitionKind, type DefinitionScope } from "@pu/core/definitions";
import { definitionTrustItem, isTrustedKind, projectTrustItems } from "@pu/core/trust";
import type { DefinitionSummary, RequestOf, ResultOf, TrustResult } from "@pu/ipc/protocol";
import type { LaunchedAgent } from "../agents/launcher.js";
import { readGateRuns } from "../gates/gates.js";
import { agentIn, refuseWhileStopping, type EngineState } from "../state.js";
import { bindTrigger, definitionScopes, loadAgentTrigger, triggerBinding, type SpawnFields } from "./definitions.js";
import { runHookGates } from "./hook-gates.js";
import { scheduleDetails, setScheduleEnabled } from "./schedules.js";
import { spawnAgent } from "./spawn.js";
import { runSwarm } from "./swarm.js";

export class AutomationService {
  /** `untrustedNextRun`: when the scheduler next expects an untrusted schedule (by file) to fall due, kept in its memory. */
  constructor(
    private readonly state: EngineState,
    private readonly untrustedNextRun: (file: string) => Date | undefined = () => undefined,
  ) {}

  // ---- definitions ------------------------------------------------------------------------

  /** Local definitions first, then global ones not hidden by a local file; schedules carry their timing. */
  async listDefinitions(root: string | undefined, kind: DefinitionKind): Promise<DefinitionSummary[]> {
    const found = await listDefinitions(kind, definitionScopes(this.state, root));
    const definitions: DefinitionSummary[] = [];
    for (const summary of found) {
      const entry: DefinitionSummary = { ...summary };
      if (kind === "schedule" && summary.error === undefined) entry.details = await scheduleDetails(this.state, summary.name, summary.scope, summary.path, root, this.untrustedNextRun);
      definitions.push(entry);
    }
    return definitions;
  }

  /** The definition `loadDefinition` would use (local wins), as stored and as parsed. */
  async getDefinition(root: string | undefined, kind: DefinitionKind, name: string): Promise<ResultOf<"definition_get">> {
    const loaded = await loadDefinition(kind, name, definitionScopes(this.state, root));
    return { name: loaded.name, scope: loaded.scope, path: loaded.path, content: loaded.content, parsed: loaded.parsed, warnings: loaded.warnings };
  }

  /** Validates, then writes atomically; refuses to replace an existing file unless `overwrite`. */
  async saveDefinition(root: string | undefined, req: Pick<RequestOf<"definition_save">, "kind" | "name" | "content" | "scope" | "overwrite">): Promise<ResultOf<"definition_save">> {
    const saved = await saveDefinition(req.kind, req.name, req.content, { ...definitionScopes(this.state, root), scope: req.scope, overwrite: req.overwrite === true });
    this.state.log.event("definition_saved", { kind: req.kind, name: req.name, path: saved.path });
    // What a person saved through pu is theirs: it is trusted as written (a later hand edit asks again).
    if (root !== undefined && saved.scope === "local" && isTrustedKind(req.kind)) {
      const kind = req.kind;
      const loaded = await loadDefinition(kind, req.name, definitionScopes(this.state, root));
      await this.state.trust.trust(root, [definitionTrustItem(kind, loaded)]);
    }
    this.changed(root, req.kind, req.name);
    return { path: saved.path, scope: saved.scope, warnings: saved.warnings };
  }

  async deleteDefinition(root: string | undefined, kind: DefinitionKind, name: string, scope: DefinitionScope | undefined): Promise<{ path: string }> {
    const options = scope === undefined ? definitionScopes(this.state, root) : { ...definitionScopes(this.state, root), scope };
    const deleted = await deleteDefinition(kind, name, options);
    this.state.log.event("definition_deleted", { kind, name, path: deleted.path });
    this.changed(root, kind, name);
    return { path: deleted.path };
  }

  private changed(root: string | undefined, kind: DefinitionKind, name: string): void {
    this.state.events.emit("definition_changed", { ...(root !== undefined ? { projectRoot: root } : {}), kind, name });
  }

  // ---- what definitions start ------------------------------------------------------------

  /** A person's spawn: the agent definition's or template's fields applied, its trigger bound. */
  spawn(root: string, fields: SpawnFields): Promise<LaunchedAgent> {
    refuseWhileStopping(this.state);
    return spawnAgent(this.state, root, fields);
  }

  runSwarm(root: string, name: string, vars: Record<string, string> | undefined): Promise<ResultOf<"run_swarm">> {
    return runSwarm(this.state, root, name, vars);
  }

  /** Binds a trigger to an existing agent (replacing any binding), starting at its first action. */
  async assignTrigger(root: string, agentId: string, triggerName: string, vars: Record<string, string> | undefined): Promise<ResultOf<"assign_trigger">> {
    const { parsed: trigger } = await loadAgentTrigger(this.state, root, triggerName);
    const binding = triggerBinding(trigger, vars);
    await this.state.updateManifest(root, (m) => {
      const { agent } = agentIn(m, agentId);
      // Its actions are typed into the agent when it waits: one that has ended never will.
      if (!agent.suspended && !this.state.isRunning(agentId)) {
        throw new PuError("INVALID_STATE", `${agentId} is not running${agent.exitCode !== undefined ? ` (it exited, code ${agent.exitCode})` : ""}; a trigger binds to a running or benched agent`);
      }
      bindTrigger(agent, binding);
    });
    this.state.log.event("trigger_assigned", { projectRoot: root, agentId, trigger: trigger.name });
    // An agent already waiting will not become waiting again by itself.
    this.state.events.emit("trigger_assigned", { projectRoot: root, agentId });
    return { agentId, triggerName: trigger.name, triggerTotal: trigger.sequence.length, triggerState: "active" };
  }

  /** Every recorded gate run of an agent (the file keeps the last 200), oldest first. */
  async triggerLog(root: string, agentId: string): Promise<ResultOf<"trigger_log">> {
    agentIn(await this.state.store.read(root), agentId);
    return { runs: await readGateRuns(root, agentId) };
  }

  /** Toggles `enabled` in the project's schedule file (other keys and comments kept) and re-arms the timer. */
  async setScheduleEnabled(root: string, name: string, enabled: boolean): Promise<ResultOf<"schedule_enable">> {
    const result = await setScheduleEnabled(this.state, root, name, enabled);
    this.changed(root, "schedule", name);
    return result;
  }

  /** `pu gate pre-commit|pre-push` from a git hook: every matching trigger's gates, run in `cwd`. */
  hookGates(root: string, event: RequestOf<"gate">["event"], cwd: string): Promise<ResultOf<"gate">> {
    return runHookGates(this.state, root, event, cwd);
  }

  /** Shows what the project's `.pu/` can run and (unless `showOnly`) trusts all of it as it is now. */
  async trust(root: string, showOnly: boolean): Promise<TrustResult> {
    const items = await projectTrustItems({ ...definitionScopes(this.state, root), projectRoot: root });
    const untrusted = new Set((await this.state.trust.untrusted(root, items)).map((i) => i.key));
    const recorded = showOnly ? 0 : untrusted.size;
    if (!showOnly) {
      await this.state.trust.trust(root, items);
      this.state.log.event("trusted", { projectRoot: root, items: [...untrusted] });
      // Also with nothing new to record: `pu trust` is "try again" for what waited on trust, such as
      // a ticket that waited for an unreadable trust.json which is fixed now.
      this.state.events.emit("project_trusted", { projectRoot: root, keys: [...untrusted] });
    }
    return { items: items.map(({ key, file, runs }) => ({ key, file, runs, trusted: !untrusted.has(key) })), recorded };
  }
}
