// The guard's rules that the end-to-end tests cannot reach in reasonable time or from a real
// browser: a login link's expiry and the cap on outstanding links, IPv6 and mixed-case Host
// headers, a session cookie among others and the key it needs, and Fetch Metadata saying cross-site.
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { AccessGuard } from "../src/access-guard.js";

const request = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;

describe("AccessGuard", () => {
  const guard = () => new AccessGuard(["127.0.0.1", "localhost", "::1"], 7420);

  it("accepts this server's hosts in any case and IPv6 in brackets; refuses another port or name", () => {
    const g = guard();
    expect(g.hostAllowed(request({ host: "LOCALHOST:7420" }))).toBe(true);
    expect(g.hostAllowed(request({ host: "[::1]:7420" }))).toBe(true);
    expect(g.hostAllowed(request({ host: "127.0.0.1:7421" }))).toBe(false);
    expect(g.hostAllowed(request({ host: "127.0.0.1" }))).toBe(false);
    expect(g.hostAllowed(request({ host: "evil.example:7420" }))).toBe(false);
    expect(g.hostAllowed(request({}))).toBe(false);
  });

  it("a login link works once, and not after fifteen minutes", () => {
    const g = guard();
    const now = 1_000_000;
    const token = g.mintLoginToken(now);
    expect(g.redeemLoginToken(token, now + 1000)).toBeDefined();
    expect(g.redeemLoginToken(token, now + 2000)).toBeUndefined();
    const late = g.mintLoginToken(now);
    expect(g.redeemLoginToken(late, now + 15 * 60_000)).toBeUndefined();
  });

  it("keeps at most 64 unused links: minting more drops the oldest", () => {
    const g = guard();
    const tokens = Array.from({ length: 65 }, () => g.mintLoginToken(5));
    expect(g.redeemLoginToken(tokens[0]!, 6)).toBeUndefined();
    expect(g.redeemLoginToken(tokens[1]!, 6)).toBeDefined();
    expect(g.redeemLoginToken(tokens[64]!, 6)).toBeDefined();
  });

  it("a session needs its cookie (found among others) and its key; either alone is nothing", () => {
    const g = guard();
    const { id, key } = g.redeemLoginToken(g.mintLoginToken())!;
    const cookie = `theme=dark; ${g.cookieName}=${id}; other=1`;
    expect(g.session(request({ cookie, "x-pu-key": key }), "header")).toBeDefined();
    expect(g.session(request({ cookie }), "header")).toBeUndefined();
    expect(g.session(request({ cookie, "x-pu-key": `${key}x` }), "header")).toBeUndefined();
    expect(g.session(request({ "x-pu-key": key }), "header")).toBeUndefined();
    expect(g.session(request({ cookie: `pu_session_7421=${id}`, "x-pu-key": key }), "header")).toBeUndefined();
    // Another session's key does not open this one.
    const other = g.redeemLoginToken(g.mintLoginToken())!;
    expect(g.session(request({ cookie, "x-pu-key": other.key }), "header")).toBeUndefined();
  });

  it("a WebSocket upgrade brings the key as the subprotocol pu-key.KEY, not as a header", () => {
    const g = guard();
    const { id, key } = g.redeemLoginToken(g.mintLoginToken())!;
    const cookie = `${g.cookieName}=${id}`;
    expect(g.session(request({ cookie, "sec-websocket-protocol": `pu, pu-key.${key}` }), "subprotocol")).toBeDefined();
    expect(g.session(request({ cookie, "sec-websocket-protocol": `pu-key.${key},pu` }), "subprotocol")).toBeDefined();
    expect(g.session(request({ cookie, "sec-websocket-protocol": "pu" }), "subprotocol")).toBeUndefined();
    expect(g.session(request({ cookie, "sec-websocket-protocol": "pu, pu-key." }), "subprotocol")).toBeUndefined();
    expect(g.session(request({ cookie, "x-pu-key": key }), "subprotocol")).toBeUndefined();
  });

  it("a request Fetch Metadata calls cross-site, or from another origin, is not from this site", () => {
    const g = guard();
    expect(g.requestFromThisSite(request({ origin: "http://127.0.0.1:7420", "sec-fetch-site": "same-origin" }))).toBe(true);
    expect(g.requestFromThisSite(request({}))).toBe(true);
    expect(g.requestFromThisSite(request({ "sec-fetch-site": "cross-site" }))).toBe(false);
    expect(g.requestFromThisSite(request({ "sec-fetch-site": "same-site" }))).toBe(false);
    expect(g.requestFromThisSite(request({ origin: "http://localhost:7421" }))).toBe(false);
    expect(g.originAllowed(request({}))).toBe(false);
  });

  it("the CLI's secret is checked as a Bearer token only", () => {
    const g = guard();
    expect(g.hasSecret(request({ authorization: `Bearer ${g.secret}` }))).toBe(true);
    expect(g.hasSecret(request({ authorization: g.secret }))).toBe(false);
    expect(g.hasSecret(request({ authorization: "Bearer nope" }))).toBe(false);
  });
});
