// The building blocks every request schema shares (see requests/*.ts).
import { z } from "zod";
import { DEFINITION_KINDS } from "@pu/core/paths";

// Terminal bytes travel as msgpack bin; msgpackr decodes bin to Buffer (a Uint8Array).
// z.custom keeps the type as plain Uint8Array, so a Node Buffer is accepted without casts.
export const Bytes = z.custom<Uint8Array>((value) => value instanceof Uint8Array, { message: "expected binary data" });
const Id = z.union([z.number().int(), z.string().max(128)]);
export const ProjectRoot = z.string().min(1).max(4096);
export const AgentId = z.string().min(1).max(64);
export const Name = z.string().max(256);
export const Vars = z.record(z.string().max(256), z.string().max(65536));
export const Text = z.string().max(4 * 1024 * 1024);
// Any positive size is accepted; the daemon clamps it (see AgentSession.setViewerSize).
export const TerminalSide = z.number().int().min(1).max(1_000_000);

export const DefinitionKindSchema = z.enum(DEFINITION_KINDS);
export type DefinitionKind = z.infer<typeof DefinitionKindSchema>;
export const Scope = z.enum(["local", "global"]);

export function req<T extends string, S extends z.ZodRawShape>(type: T, shape: S) {
  return z.object({ type: z.literal(type), id: Id, ...shape });
}

