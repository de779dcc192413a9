// Which function answers which request. Requests not listed here (definitions, swarms,
// triggers, schedules, gates) belong to later layers and get "unsupported request".
import type { Handlers } from "@pu/ipc/server";
import { handleAttach } from "./handlers/attach.js";
import { handleClean } from "./handlers/clean.js";
import { handleDiff } from "./handlers/diff.js";
import { handleHealth } from "./handlers/health.js";
import { handleInit } from "./handlers/init.js";
import { handleInput } from "./handlers/input.js";
import { handleKill } from "./handlers/kill.js";
import { handleLogs } from "./handlers/logs.js";
import { handleMerge } from "./handlers/merge.js";
import { handleRename } from "./handlers/rename.js";
import { handleResize } from "./handlers/resize.js";
import { handleResume } from "./handlers/resume.js";
import { handleShutdown } from "./handlers/shutdown.js";
import { handleSpawn } from "./handlers/spawn.js";
import { handleStatus } from "./handlers/status.js";
import { handleSubscribeStatus } from "./handlers/subscribe-status.js";
import { handleSuspend } from "./handlers/suspend.js";
import type { EngineState } from "./state.js";

export function createHandlers(state: EngineState): Handlers {
  return {
    health: (req) => handleHealth(state, req),
    shutdown: (req) => handleShutdown(state, req),
    init: (req) => handleInit(state, req),
    spawn: (req) => handleSpawn(state, req),
    status: (req) => handleStatus(state, req),
    subscribe_status: (req, ctx) => handleSubscribeStatus(state, req, ctx),
    kill: (req) => handleKill(state, req),
    suspend: (req) => handleSuspend(state, req),
    resume: (req) => handleResume(state, req),
    logs: (req) => handleLogs(state, req),
    attach: (req, ctx) => handleAttach(state, req, ctx),
    input: (req) => handleInput(state, req),
    resize: (req) => handleResize(state, req),
    rename: (req) => handleRename(state, req),
    diff: (req) => handleDiff(state, req),
    merge: (req) => handleMerge(state, req),
    clean: (req) => handleClean(state, req),
  };
}
