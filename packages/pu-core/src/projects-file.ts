// `$PU_HOME/projects.json`: every project the daemon has served, so a restarted daemon knows
// which manifests to reconcile and which queues and schedules to watch. Written only by the
// daemon (locked, atomic); a file it cannot read is reported and never overwritten, since the
// projects it lists would be lost.
import path from "node:path";
import { z } from "zod";
import { parseJsonText } from "./json-state.js";

const ProjectsFileSchema = z.object({
  version: z.literal(1).default(1),
  projects: z.array(
    z.object({
      root: z.string().refine((root) => path.isAbsolute(root), "must be an absolute path"),
      lastSeenAt: z.string().default(""),
    }),
  ),
});
export type ProjectsFile = z.infer<typeof ProjectsFileSchema>;

/** The file's projects; CONFIG_ERROR naming the file and every bad field. */
export function parseProjectsFile(text: string, filePath: string): ProjectsFile {
  return parseJsonText(ProjectsFileSchema, text, filePath, "CONFIG_ERROR");
}
