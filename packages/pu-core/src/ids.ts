// Identifiers: `wt-`/`ag-` plus 8 characters of [a-z0-9] (spec), sessions are UUID v4.
import { randomInt, randomUUID } from "node:crypto";

const ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const ID_SUFFIX_LENGTH = 8;

function randomSuffix(): string {
  let suffix = "";
  // randomInt rejects out-of-range draws, so every character is equally likely.
  for (let i = 0; i < ID_SUFFIX_LENGTH; i++) suffix += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return suffix;
}

export function newWorktreeId(): string {
  return `wt-${randomSuffix()}`;
}

export function newAgentId(): string {
  return `ag-${randomSuffix()}`;
}

export function newSessionId(): string {
  return randomUUID();
}

const WORKTREE_ID = /^wt-[a-z0-9]{8}$/;
const AGENT_ID = /^ag-[a-z0-9]{8}$/;
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export function isWorktreeId(s: string): boolean {
  return WORKTREE_ID.test(s);
}

export function isAgentId(s: string): boolean {
  return AGENT_ID.test(s);
}

export function isSessionId(s: string): boolean {
  return SESSION_ID.test(s);
}
