import type { SwarmDefinition } from "@pu/core/definitions";
import { Command } from "../../clipanion.js";
import { DefinitionShowCommand, NOUNS } from "../../definition-commands.js";

export default class SwarmShowCommand extends DefinitionShowCommand {
  static override paths = [["swarm", "show"]];
  static override usage = Command.Usage({
    description: "Print a swarm definition and the worktrees and agents it starts",
    examples: [
      ["Show a swarm", "$0 swarm show review-team"],
      ["As JSON (text and parsed form)", "$0 swarm show review-team --json"],
    ],
  });
  readonly noun = NOUNS.swarm;

  summarize(parsed: unknown): string[] {
    const swarm = parsed as SwarmDefinition;
    const names = Array.from({ length: swarm.worktreeCount }, (_, i) =>
      swarm.worktreeTemplate.replaceAll("{name}", swarm.name).replaceAll("{index}", String(i + 1)),
    );
    const lines = [`worktrees: ${names.join(", ")}`, "each with:"];
    for (const entry of swarm.roster) lines.push(`  ${entry.quantity} × ${entry.role} (agent definition ${entry.agentDef})`);
    if (swarm.includeTerminal) lines.push("  1 × terminal");
    return lines;
  }
}
