import { Writable } from "node:stream";
import { PuError } from "@pu/core/errors";
import { describe, expect, it } from "vitest";
import { Report } from "../src/report.js";
import { CliUsageError } from "../src/usage-error.js";

/** A real writable stream that keeps what was written, as the tests' stdout or stderr. */
class Captured extends Writable {
  chunks: Buffer[] = [];
  constructor(private readonly delayMs = 0, highWaterMark?: number) {
    super(highWaterMark === undefined ? {} : { highWaterMark });
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.chunks.push(chunk);
    if (this.delayMs > 0) setTimeout(done, this.delayMs);
    else done();
  }
  get text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

function reportFor(json: boolean, stdout = new Captured()) {
  const stderr = new Captured();
  return { report: new Report(json, { stdout, stderr }), stdout, stderr };
}

const result = { agentId: "ag-ab12cd34", bytes: 5, data: Buffer.from("héllo") };
const human = (out: { line(text?: string): void }) => {
  out.line(`sent ${result.bytes} byte(s) to ${result.agentId}`);
  out.line();
  out.line("done");
};

describe("Report.result", () => {
  it("with --json prints exactly one JSON document and nothing else on stdout", () => {
    const { report, stdout, stderr } = reportFor(true);
    expect(report.result(result, human)).toBe(0);
    expect(stdout.text.endsWith("}\n")).toBe(true);
    // One document: the whole of stdout parses, terminal bytes as text (not arrays of numbers).
    expect(JSON.parse(stdout.text)).toEqual({ agentId: "ag-ab12cd34", bytes: 5, data: "héllo" });
    expect(stderr.text).toBe("");
  });

  it("without --json prints the human lines and no JSON", () => {
    const { report, stdout, stderr } = reportFor(false);
    expect(report.result(result, human, 1)).toBe(1);
    expect(stdout.text).toBe("sent 5 byte(s) to ag-ab12cd34\n\ndone\n");
    expect(stderr.text).toBe("");
  });

  it("writes raw output as given", () => {
    const { report, stdout } = reportFor(false);
    report.result(result, (out) => out.write(result.data));
    expect(stdout.text).toBe("héllo");
  });

  it("notes go to stderr in both modes, never into the JSON document", () => {
    for (const json of [true, false]) {
      const { report, stdout, stderr } = reportFor(json);
      report.note("pu: warning: unknown key");
      report.result({ ok: true }, (out) => out.line("ok"));
      expect(stderr.text).toBe("pu: warning: unknown key\n");
      expect(stdout.text).toBe(json ? `${JSON.stringify({ ok: true }, null, 2)}\n` : "ok\n");
    }
  });
});

describe("one escaping rule for human output", () => {
  const hostile = "title \x1b]0;pwned\x07\x1b[2J\r";
  it("lines, notes and errors show control characters as \\xNN; line breaks and tabs stay", () => {
    const { report, stdout, stderr } = reportFor(false);
    report.result({}, (out) => out.line(`${hostile}\n\tnext`));
    report.note(`pu: warning: ${hostile}`);
    expect(report.error(new PuError("INVALID_ARGUMENT", `ticket id "${hostile}" is not TYPE-NNNN`))).toBe(2);
    expect(stdout.text).toBe("title \\x1b]0;pwned\\x07\\x1b[2J\\x0d\n\tnext\n");
    expect(stderr.text).toBe('pu: warning: title \\x1b]0;pwned\\x07\\x1b[2J\\x0d\npu: ticket id "title \\x1b]0;pwned\\x07\\x1b[2J\\x0d" is not TYPE-NNNN\n');
  });

  it("raw output (terminal bytes, pu's own colours) is written as given", () => {
    const { report, stdout } = reportFor(false);
    report.result({}, (out) => out.write(`\x1b[31m${hostile}\x1b[0m`));
    expect(stdout.text).toBe(`\x1b[31m${hostile}\x1b[0m`);
  });

  it("the --json document keeps the text itself (JSON escapes it)", () => {
    const { report, stdout } = reportFor(true);
    report.result({ title: hostile }, (out) => out.line(hostile));
    expect(JSON.parse(stdout.text)).toEqual({ title: hostile });
    expect(stdout.text).not.toContain("\x1b");
  });
});

describe("Report.error", () => {
  it("prints one stderr line and returns the exit code for the error's code", () => {
    const cases: [unknown, number, string][] = [
      [new PuError("AGENT_NOT_FOUND", "no agent ag-00000000"), 3, "pu: no agent ag-00000000"],
      [new PuError("DAEMON_UNAVAILABLE", "pu daemon is not running"), 4, "pu: pu daemon is not running"],
      // The daemon refusing a request exits like the CLI's own usage errors.
      [new PuError("INVALID_ARGUMENT", "bad --tail"), 2, "pu: bad --tail"],
      [new CliUsageError("say what to bench: an agent ID or --all"), 2, "pu: say what to bench: an agent ID or --all"],
      [new PuError("GIT_ERROR", "git failed:\n  fatal: bad object\n"), 1, "pu: git failed:; fatal: bad object"],
      [new Error("boom"), 1, "pu: boom"],
    ];
    for (const [error, exitCode, line] of cases) {
      const { report, stdout, stderr } = reportFor(false);
      expect(report.error(error)).toBe(exitCode);
      expect(stderr.text).toBe(`${line}\n`);
      expect(stdout.text).toBe("");
    }
  });

  it("with --json also prints the error document, details included", () => {
    const { report, stdout, stderr } = reportFor(true);
    const conflict = new PuError("MERGE_CONFLICT", "merging wt-ab12cd34 conflicts\nin 2 files", { details: { conflicts: ["a.ts", "b.ts"] } });
    expect(report.error(conflict)).toBe(1);
    expect(stderr.text).toBe("pu: merging wt-ab12cd34 conflicts; in 2 files\n");
    expect(JSON.parse(stdout.text)).toEqual({
      error: { code: "MERGE_CONFLICT", message: "merging wt-ab12cd34 conflicts; in 2 files", details: { conflicts: ["a.ts", "b.ts"] } },
    });
  });

  it("leaves details out of the document when the error has none", () => {
    const { report, stdout } = reportFor(true);
    expect(report.error(new CliUsageError("unknown command \"frob\""))).toBe(2);
    expect(JSON.parse(stdout.text)).toEqual({ error: { code: "INVALID_ARGUMENT", message: 'unknown command "frob"' } });
  });
});

describe("Report.streamEvent", () => {
  it("with --json prints one compact JSON line per event", async () => {
    const { report, stdout } = reportFor(true);
    await report.streamEvent({ offset: 0, data: Buffer.from("a\r\n") }, (out) => out.write("unused"));
    await report.streamEvent({ agentId: "ag-ab12cd34", exitCode: 0 }, () => {});
    const lines = stdout.text.split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe("");
    expect(lines.slice(0, 2).map((l) => JSON.parse(l))).toEqual([{ offset: 0, data: "a\r\n" }, { agentId: "ag-ab12cd34", exitCode: 0 }]);
  });

  it("without --json writes what the human callback writes", async () => {
    const { report, stdout } = reportFor(false);
    await report.streamEvent({ offset: 0 }, (out) => out.write("\x1b[1mbold\x1b[0m"));
    await report.streamEvent({ agentId: "ag-ab12cd34", exitCode: 0 }, () => {});
    expect(stdout.text).toBe("\x1b[1mbold\x1b[0m");
  });

  it("waits until a slow stdout has taken the backlog before the next event", async () => {
    const stdout = new Captured(20, 4);
    const { report } = reportFor(false, stdout);
    await report.streamEvent({}, (out) => out.write("more than four bytes"));
    expect(stdout.writableLength).toBe(0);
    expect(stdout.text).toBe("more than four bytes");
  });
});
