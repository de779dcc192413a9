// Hostile wire input for the daemon: random and adversarial frames built from a seeded
// PRNG. Nothing here may ask the daemon to change anything real (no init, spawn that
// could succeed, shutdown or global definition writes): only the protocol is attacked.
import { encodeFrame, MAX_FRAME_BYTES } from "@pu/ipc/frame";
import { PROTOCOL_VERSION, RequestSchemas } from "@pu/ipc/protocol";
import type { Prng } from "./fault-procs.js";

export interface HostileFrame {
  kind: string;
  bytes: Buffer;
  /** The daemon may (should) close the connection after this frame. */
  fatal: boolean;
}

const NOWHERE = "/nonexistent/pu-fault-project";

/** A length prefix followed by `body` as is. */
export function rawFrame(body: Buffer, declaredLength = body.length): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(declaredLength >>> 0, 0);
  return Buffer.concat([header, body]);
}

export function helloFrame(id: number | string = 0): Buffer {
  return encodeFrame({ type: "hello", id, protocolVersion: PROTOCOL_VERSION, client: "fault-frames" });
}

/** `depth` nested one-element msgpack arrays ending in nil. */
function nestedArrays(depth: number): Buffer {
  return Buffer.concat([Buffer.alloc(depth, 0x91), Buffer.from([0xc0])]);
}

/** A msgpack map {type: "status", id, projectRoot: <nested arrays>} written by hand. */
function deeplyNestedRequest(id: number, depth: number): Buffer {
  const str = (s: string) => Buffer.concat([Buffer.from([0xa0 | s.length]), Buffer.from(s)]);
  return Buffer.concat([
    Buffer.from([0x83]),
    str("type"),
    str("status"),
    str("id"),
    Buffer.from([0xcd, (id >> 8) & 0xff, id & 0xff]),
    str("projectRoot"),
    nestedArrays(depth),
  ]);
}

const REQUEST_TYPES = Object.keys(RequestSchemas).filter((t) => t !== "shutdown" && t !== "init" && t !== "hello");

function weirdValue(rng: Prng): unknown {
  return rng.pick<() => unknown>([
    () => rng.int(-(2 ** 31), 2 ** 31),
    () => rng.next() * 1e300,
    () => -0,
    () => Number.NaN,
    () => Number.POSITIVE_INFINITY,
    () => null,
    () => true,
    () => rng.bytes(rng.int(0, 64)),
    () => "x".repeat(rng.int(0, 300)),
    () => "\u0000\uffff\ud800",
    () => [1, "two", [3]],
    () => ({ nested: { deeper: [null] } }),
    () => ({ __proto__: { polluted: true } }),
    () => 2 ** 53 + rng.int(1, 1000),
  ])();
}

/** A well-framed map that is an invalid (or harmless) request. Never fatal on its own. */
function framedNonsense(rng: Prng, id: number): HostileFrame {
  const make = rng.pick<() => [string, object]>([
    () => ["unknown-type", { type: `frobnicate-${rng.int(0, 99)}`, id }],
    () => ["type-not-string", { type: weirdValue(rng), id }],
    () => ["missing-id", { type: "health" }],
    () => ["weird-id", { type: "health", id: weirdValue(rng) }],
    () => ["wrong-field-type", { type: "status", id, projectRoot: weirdValue(rng) }],
    () => ["binary-for-string", { type: rng.pick(["status", "kill", "logs"]), id, projectRoot: rng.bytes(16), agentId: rng.bytes(8), target: rng.bytes(8) }],
    () => ["binary-type", { type: Buffer.from("health"), id }],
    () => ["random-fields", { type: rng.pick(REQUEST_TYPES), id, [`f${rng.int(0, 9)}`]: weirdValue(rng), projectRoot: NOWHERE, agentId: "ag-nothere1" }],
    () => ["logs-bad-tail", { type: "logs", id, agentId: "ag-nothere1", tail: rng.pick([-1, 1.5, "10", 2 ** 60]) }],
    () => ["input-string-data", { type: "input", id, agentId: "ag-nothere1", data: "not bytes" }],
    () => ["resize-out-of-range", { type: "resize", id, agentId: "ag-nothere1", cols: rng.pick([0, -5, 100000, 1.5]), rows: 40 }],
    () => ["spawn-invalid", { type: "spawn", id, projectRoot: NOWHERE, extraArgs: rng.pick([[1, 2], "no", Array(300).fill("a")]) }],
    () => ["spawn-no-project", { type: "spawn", id, projectRoot: NOWHERE, prompt: "never runs" }],
    () => ["definition-save-bad", { type: "definition_save", id, kind: "trigger", name: rng.pick(["../x", "a/b", ".hidden", "x\u0000y"]), content: "name: x", scope: "local", projectRoot: NOWHERE }],
    () => ["kill-nowhere", { type: "kill", id, projectRoot: NOWHERE, target: "all" }],
    () => ["second-hello", { type: "hello", id, protocolVersion: PROTOCOL_VERSION, client: "again" }],
    () => ["proto-key", JSON.parse(`{"type":"health","id":${id},"__proto__":{"type":"shutdown"}}`) as object],
    () => ["valid-health", { type: "health", id }],
    () => ["valid-status-nowhere", { type: "status", id, projectRoot: NOWHERE }],
  ]);
  const [kind, msg] = make();
  return { kind, bytes: encodeFrame(msg), fatal: false };
}

/** A frame that breaks the framing or the body; the daemon may close the connection. */
function brokenFrame(rng: Prng, id: number): HostileFrame {
  const make = rng.pick<() => [string, Buffer]>([
    () => ["garbage", rng.bytes(rng.int(1, 2048))],
    () => ["garbage-framed", rawFrame(rng.bytes(rng.int(1, 2048)))],
    () => {
      const whole = encodeFrame({ type: "status", id, projectRoot: NOWHERE });
      return ["truncated", whole.subarray(0, rng.int(1, whole.length - 1))];
    },
    () => ["length-larger-than-body", rawFrame(encodeFrame({ type: "health", id }).subarray(4), rng.int(100, 5000))],
    () => ["oversized-prefix", rawFrame(rng.bytes(16), rng.pick([MAX_FRAME_BYTES + 1, 0xffffffff, 0x7fffffff]))],
    () => ["zero-length", rawFrame(Buffer.alloc(0))],
    () => ["not-a-map-array", rawFrame(Buffer.from([0x93, 0x01, 0x02, 0x03]))],
    () => ["not-a-map-int", rawFrame(Buffer.from([0x2a]))],
    () => ["not-a-map-string", rawFrame(Buffer.from([0xa3, 0x61, 0x62, 0x63]))],
    () => ["not-a-map-nil", rawFrame(Buffer.from([0xc0]))],
    () => ["deep-nesting", rawFrame(deeplyNestedRequest(id, rng.pick([1000, 100_000, 1_000_000])))],
    () => ["map-trailing-bytes", rawFrame(Buffer.concat([encodeFrame({ type: "health", id }).subarray(4), rng.bytes(8)]))],
    () => ["ext-types", rawFrame(Buffer.concat([Buffer.from([0x82, 0xa4, 0x74, 0x79, 0x70, 0x65, 0xc7, 8, rng.int(0, 255)]), rng.bytes(8), Buffer.from([0xa2, 0x69, 0x64, 0x01])]))],
    () => ["huge-declared-map", rawFrame(Buffer.from([0xdf, 0xff, 0xff, 0xff, 0xff]))],
    () => ["huge-declared-str", rawFrame(Buffer.from([0x81, 0xa4, 0x74, 0x79, 0x70, 0x65, 0xdb, 0x7f, 0xff, 0xff, 0xff, 0x61]))],
  ]);
  const [kind, bytes] = make();
  return { kind, bytes, fatal: true };
}

/** Strings near the protocol limits: big, but inside MAX_FRAME_BYTES. */
export function hugeFrame(rng: Prng, id: number): HostileFrame {
  const size = rng.int(1, 4) * 1024 * 1024;
  const make = rng.pick<() => [string, object]>([
    () => ["huge-prompt", { type: "spawn", id, projectRoot: NOWHERE, prompt: "p".repeat(size) }],
    () => ["huge-project-root", { type: "status", id, projectRoot: "/".repeat(size) }],
    // The daemon echoes an unknown type in its error; escaped NULs grow six-fold.
    () => ["huge-unknown-type", { type: "\u0000".repeat(size), id }],
    () => ["huge-id", { type: "health", id: "i".repeat(size) }],
    () => ["huge-input-unknown-agent", { type: "input", id, agentId: "ag-nothere1", data: Buffer.alloc(size, 0x61) }],
  ]);
  const [kind, msg] = make();
  return { kind, bytes: encodeFrame(msg), fatal: false };
}

export interface HostileConnectionPlan {
  sayHello: boolean;
  frames: HostileFrame[];
  /** Whether the plan ends in a frame that breaks the connection. */
  broken: boolean;
}

/** One connection's worth of hostile input. */
export function planConnection(rng: Prng, nextId: () => number, allowHuge: boolean): HostileConnectionPlan {
  const sayHello = rng.chance(0.85);
  const frames: HostileFrame[] = [];
  const count = rng.int(5, 40);
  for (let i = 0; i < count; i++) {
    frames.push(allowHuge && rng.chance(0.02) ? hugeFrame(rng, nextId()) : framedNonsense(rng, nextId()));
  }
  const broken = rng.chance(0.6);
  if (broken) frames.push(brokenFrame(rng, nextId()));
  return { sayHello, frames, broken };
}
