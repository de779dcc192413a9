// `<project>/.pu/schedule-state.json`: per schedule, the runs that fell due while no daemon
// watched (missed) and the runs not fired because the schedule was not trusted (held). Written
// only by the daemon (locked, atomic); a file it cannot read is reported and never overwritten,
// since the other schedules' counts in it would be lost.
import path from "node:path";
import { z } from "zod";
import { parseJsonText } from "./json-state.js";

const count = z.number().int().nonnegative();

const ScheduleStateEntrySchema = z.object({
  missedRuns: count.default(0),
  lastMissedAt: z.string().optional(),
  heldRuns: count.optional(),
  lastHeldAt: z.string().optional(),
  heldReason: z.string().optional(),
});

const ScheduleStateFileSchema = z.object({
  version: z.literal(1).default(1),
  schedules: z.record(z.string(), ScheduleStateEntrySchema),
});
export type ScheduleStateFile = z.infer<typeof ScheduleStateFileSchema>;

export function scheduleStatePath(projectPuDir: string): string {
  return path.join(projectPuDir, "schedule-state.json");
}

/** The file's counts; CONFIG_ERROR naming the file and every bad field. */
export function parseScheduleState(text: string, filePath: string): ScheduleStateFile {
  return parseJsonText(ScheduleStateFileSchema, text, filePath, "CONFIG_ERROR");
}
