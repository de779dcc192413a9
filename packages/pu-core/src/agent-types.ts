/**
 * What pu knows about each built-in agent CLI, in one table: launch, spawn, recovery and
 * the CLI read it from here. A project's `.pu/config.yaml` may override the launch fields
 * (command, promptFlag, interactive, launchArgs, resumeArgs) per type; the rest is how the
 * program itself behaves, which configuration cannot change.
 */

/** The token in argument lists that is replaced by the agent's session id. */
export const SESSION_ID_PLACEHOLDER = "{sessionId}";

/** How a prompt given at spawn reaches the program. */
export type PromptDelivery =
  /** typed into the PTY once the program is up */
  | "typed"
  /** on the command line, after `promptFlag` when set, else as the last argument */
  | "argv";

/** How a stopped agent's conversation is picked up again. */
export type ResumeKind =
  /** by the session id pu chose at start (`sessionIdArgs`) */
  | "session-id"
  /** by the program's own "continue the last conversation" */
  | "last"
  /** it cannot: a resumed agent starts afresh */
  | "none";

export interface AgentTypeDescriptor {
  displayName: string;
  command: string;
  promptDelivery: PromptDelivery;
  promptFlag?: string;
  resume: ResumeKind;
  resumeArgs?: string[];
  /** Arguments giving a new conversation the id pu chose (resume "session-id"). */
  sessionIdArgs?: string[];
  /** Arguments that start it in plan mode (read-only planning), where it has one. */
  planModeArgs?: string[];
  /** Arguments that let it act without asking for each permission ("yolo"). */
  unattendedArgs?: string[];
  /**
   * Pause before the Enter that submits typed text. A CLI that takes a fast burst of keys
   * as a paste treats an Enter inside the burst as a newline (Codex: keys closer than 8 ms
   * are a burst, and Enter within 120 ms after one inserts a newline).
   */
  submitPauseMs?: number;
  /**
   * What a person presses to stop the turn in progress (a budget interrupt sends it). OpenCode
   * asks for Escape twice; a second Escape at Claude's or Codex's idle prompt would open their
   * history instead, so they get one.
   */
  interruptKeys?: string[];
}

/** The pause before Enter for types that do not name one. */
const DEFAULT_SUBMIT_PAUSE_MS = 50;

const BUILTIN_DESCRIPTORS = {
  claude: {
    displayName: "Claude",
    command: "claude",
    promptDelivery: "typed",
    resume: "session-id",
    resumeArgs: ["--resume", SESSION_ID_PLACEHOLDER],
    sessionIdArgs: ["--session-id", SESSION_ID_PLACEHOLDER],
    planModeArgs: ["--permission-mode", "plan"],
    unattendedArgs: ["--dangerously-skip-permissions"],
    interruptKeys: ["\x1b"],
  },
  codex: {
    displayName: "Codex",
    command: "codex",
    promptDelivery: "argv",
    resume: "last",
    resumeArgs: ["resume", "--last"],
    unattendedArgs: ["--dangerously-bypass-approvals-and-sandbox"],
    submitPauseMs: 250,
    interruptKeys: ["\x1b"],
  },
  opencode: {
    displayName: "OpenCode",
    command: "opencode",
    promptDelivery: "argv",
    promptFlag: "--prompt",
    resume: "last",
    resumeArgs: ["--continue"],
    interruptKeys: ["\x1b", "\x1b"],
  },
  terminal: {
    displayName: "Terminal",
    // The person's $SHELL at launch; see builtinAgentTypes in config.ts.
    command: "/bin/sh",
    promptDelivery: "typed",
    resume: "none",
  },
} as const satisfies Record<string, AgentTypeDescriptor>;

export type BuiltinAgentType = keyof typeof BUILTIN_DESCRIPTORS;

export const BUILTIN_AGENT_TYPE_NAMES = Object.keys(BUILTIN_DESCRIPTORS) as BuiltinAgentType[];

/** The built-in descriptor of a type name; undefined for a type only a project's config defines. */
export function agentTypeDescriptor(name: string): AgentTypeDescriptor | undefined {
  return Object.hasOwn(BUILTIN_DESCRIPTORS, name) ? BUILTIN_DESCRIPTORS[name as BuiltinAgentType] : undefined;
}

/** How the agent type is shown to people: "Claude", or the configured name itself. */
export function agentDisplayName(name: string): string {
  return agentTypeDescriptor(name)?.displayName ?? name;
}

/** How long to pause between typed text and the Enter that submits it (see submitPauseMs). */
export function submitPauseMs(name: string): number {
  return agentTypeDescriptor(name)?.submitPauseMs ?? DEFAULT_SUBMIT_PAUSE_MS;
}

/** pu chooses this type's session id at start (it is needed to resume it). */
/** The keys that interrupt a turn of this type; Ctrl-C for a shell or a command pu does not know. */
export function interruptKeysOf(name: string): string[] {
  return agentTypeDescriptor(name)?.interruptKeys ?? ["\x03"];
}

export function usesSessionId(name: string): boolean {
  return agentTypeDescriptor(name)?.resume === "session-id";
}

/**
 * A stopped agent can be picked up again: by its session id, by the program's own "continue
 * last", or (for a configured type) because its configuration gives resume arguments.
 */
export function canResume(agent: { agentType: string; sessionId?: string }, configuredResumeArgs: boolean): boolean {
  const resume = agentTypeDescriptor(agent.agentType)?.resume;
  if (resume === "session-id") return typeof agent.sessionId === "string" && agent.sessionId.length > 0;
  if (resume === "last") return true;
  return configuredResumeArgs;
}
