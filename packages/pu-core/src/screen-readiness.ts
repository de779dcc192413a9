/**
 * What an agent CLI's rendered screen says about it: working on a turn (busy), done
 * and waiting for the next prompt (idle), asking to be allowed to do something
 * (permission), or nothing this table can tell (unknown).
 *
 * Pure: the caller passes the screen's rows as text (pu-engine's screen model) and,
 * where the program reports its own state in the stream (Codex's OSC 7501), the last
 * state it reported. Markers are the ones the real CLIs draw (claude 2.1, codex-cli
 * 0.169, opencode 1.18); docs/screen.md has the contract.
 */

export type ScreenReadiness = "busy" | "idle" | "permission" | "unknown";

export interface ScreenReading {
  /** The screen's rows, top to bottom, as plain text. */
  rows: readonly string[];
  /** The last `state=` the program reported through OSC 7501 (`working`, `done`, `idle`), if any. */
  reportedState?: string | null;
}

export interface ScreenMarkers {
  /** A dialog asking the user to allow an action: wins over everything else. */
  permission: readonly RegExp[];
  /** Drawn only while a turn is running. */
  busy: readonly RegExp[];
  /** Drawn when a turn has ended and no busy marker is on the screen. */
  idle: readonly RegExp[];
  /** Reported states (OSC 7501) that mean busy / idle. */
  reportedBusy?: readonly string[];
  reportedIdle?: readonly string[];
}

/** The markers per built-in agent type; other types (terminal, custom commands) read unknown. */
export const SCREEN_MARKERS: Readonly<Record<string, ScreenMarkers>> = {
  claude: {
    permission: [/Do you want to proceed\?/],
    // The spinner line: `✻ Thinking… (esc to interrupt)`.
    busy: [/esc to interrupt/i],
    // `✻ Cooked for 10s · done 5:06 AM` under a finished answer (the busy spinner line has
    // no duration); the footer `? for shortcuts` where auto mode is off.
    idle: [/^\s*[✻✽✶✳✢·*]\s+\S+ for \d+(\.\d+)?[smh]\b/, /\? for shortcuts/],
  },
  codex: {
    permission: [],
    // `• Working (12s • esc to interrupt)`; hidden while answer text streams, so its
    // absence alone says nothing.
    busy: [/\bWorking\b.*esc to interrupt/i],
    // `─ Worked for 12s ─` after a turn.
    idle: [/\bWorked for \d/],
    reportedBusy: ["working"],
    reportedIdle: ["idle", "done"],
  },
  opencode: {
    permission: [],
    // `■■⬝⬝⬝⬝⬝⬝  esc interrupt` under the input.
    busy: [/\besc interrupt\b/i],
    // `▣ Build · <model> · 4.2s` under each finished answer.
    idle: [/▣\s*\S[^·]*·[^·]+·\s*\d/],
  },
};

const anyRow = (rows: readonly string[], patterns: readonly RegExp[]) => patterns.some((p) => rows.some((row) => p.test(row)));

/**
 * Permission first (a dialog is up whatever else shows), then a busy marker on the
 * screen, then the program's own state report, then an idle marker; unknown otherwise.
 * A busy marker beats a reported idle state: the screen is what is drawn now.
 */
export function screenReadiness(agentType: string, screen: ScreenReading): ScreenReadiness {
  const markers = Object.hasOwn(SCREEN_MARKERS, agentType) ? SCREEN_MARKERS[agentType] : undefined;
  if (!markers) return "unknown";
  const { rows, reportedState } = screen;
  if (anyRow(rows, markers.permission)) return "permission";
  if (anyRow(rows, markers.busy)) return "busy";
  if (reportedState) {
    if (markers.reportedBusy?.includes(reportedState)) return "busy";
    if (markers.reportedIdle?.includes(reportedState)) return "idle";
  }
  if (anyRow(rows, markers.idle)) return "idle";
  return "unknown";
}
