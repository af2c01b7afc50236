// The client's line framing, against a scripted peer on in-memory streams (no service): answers
// split across chunks at any byte (a multi-byte character included), several answers in one
// chunk, blank lines, and a line past `maxFrameBytes`.

import assert from "node:assert/strict";
import { PassThrough } from "node:stream";

import {
  CancelledError,
  ConnectionClosedError,
  PendingLimitError,
  RELAY_VERSION,
  REQUEST_CANCELLED,
  RelayClient,
  RelayError,
  RelayVersionError,
  RuntimeStoppedError,
  majorVersion,
} from "../src/index.js";
import { test } from "./runner.js";

/** A client whose service side is scripted: `sent()` is what it wrote, `feed` writes to it. */
function scripted(options) {
  const fromService = new PassThrough();
  const toService = new PassThrough();
  const written = [];
  toService.on("data", (chunk) => written.push(chunk));
  const client = new RelayClient(fromService, toService, options);
  return {
    client,
    sent: () =>
      Buffer.concat(written)
        .toString("utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line)),
    feed: (...chunks) => {
      for (const chunk of chunks) fromService.write(chunk);
    },
  };
}

const answer = (id, result) => Buffer.from(`${JSON.stringify({ jsonrpc: "2.0", id, result })}\n`);

test("an answer split across chunks at every byte, a multi-byte character included, arrives whole", async () => {
  const text = "grüße, 世界";
  const line = answer(1, { text });
  for (let cut = 1; cut < line.length; cut++) {
    const { client, feed } = scripted();
    const pending = client.request("x/y", {});
    feed(line.subarray(0, cut), line.subarray(cut));
    assert.deepEqual(await pending, { text }, `cut at byte ${cut}`);
  }
  const { client, feed } = scripted();
  const pending = client.request("x/y", {});
  feed(...[...line].map((byte) => Buffer.from([byte])));
  assert.deepEqual(await pending, { text });
});

test("several answers and blank lines in one chunk each reach their request", async () => {
  const { client, sent, feed } = scripted();
  const first = client.request("a/b", { n: 1 });
  const second = client.request("a/b", { n: 2 });
  const third = client.request("a/b", { n: 3 });
  assert.deepEqual(
    sent().map((message) => [message.id, message.params.n]),
    [
      [1, 1],
      [2, 2],
      [3, 3],
    ],
  );
  feed(Buffer.concat([answer(2, "two"), Buffer.from("\n  \n"), answer(3, "three"), answer(1, "one").subarray(0, 5)]));
  assert.equal(await second, "two");
  assert.equal(await third, "three");
  feed(answer(1, "one").subarray(5));
  assert.equal(await first, "one");
});

test("a line past maxFrameBytes fails the waiting requests and closes the connection", async () => {
  const { client, feed } = scripted({ maxFrameBytes: 64 });
  const pending = client.request("a/b", {});
  feed(Buffer.from(`{"jsonrpc":"2.0","id":1,"result":"${"x".repeat(40)}`), Buffer.from("x".repeat(40)));
  await assert.rejects(pending, /maxFrameBytes/);
  const later = await client.request("a/b", {}).catch((e) => e);
  assert.ok(later instanceof ConnectionClosedError);
  assert.equal(later.reason, "frame_too_large");
  assert.match(later.message, /maxFrameBytes/);
});

test("initialize refuses a relay whose major version is not the client's, and accepts its own major", async () => {
  assert.equal(majorVersion(RELAY_VERSION), 2);
  for (const [theirs, accepted] of [
    ["2.0.0", true],
    ["2.7.1", true],
    ["1.0.0", false],
    ["3.0.0", false],
    ["two", false],
    [undefined, false],
  ]) {
    const { client, sent, feed } = scripted();
    const hello = client.initialize();
    await new Promise((resolve) => setImmediate(resolve));
    const [request] = sent();
    assert.equal(request.params.protocolVersion, RELAY_VERSION);
    feed(answer(request.id, { protocolVersion: theirs }));
    const outcome = await hello.catch((e) => e);
    if (accepted) {
      assert.equal(outcome.protocolVersion, theirs, String(theirs));
    } else {
      assert.ok(outcome instanceof RelayVersionError, String(theirs));
      assert.equal(outcome.kind, "version_mismatch");
      assert.equal(outcome.relayVersion, theirs);
    }
  }
});

const failure = (id, error) => Buffer.from(`${JSON.stringify({ jsonrpc: "2.0", id, error })}\n`);
const tick = () => new Promise((resolve) => setImmediate(resolve));

test("an aborted call waits for the relay's answer: cancelled with the signal's reason, or its real outcome", async () => {
  const { client, sent, feed } = scripted();
  const abort = new AbortController();
  let settled = false;
  const call = client.invoke("slow.run", {}, { signal: abort.signal }).finally(() => {
    settled = true;
  });
  abort.abort(new Error("the user closed the panel"));
  await tick();
  assert.deepEqual(sent()[1], { jsonrpc: "2.0", method: "$/cancelRequest", params: { id: 1 } });
  assert.equal(settled, false, "the call stays pending until the relay answered the cancel");
  feed(failure(1, { code: REQUEST_CANCELLED, message: "cancelled", data: { kind: "cancelled" } }));
  const cancelled = await call.catch((e) => e);
  assert.ok(cancelled instanceof CancelledError);
  assert.ok(cancelled instanceof RelayError);
  assert.equal(cancelled.code, REQUEST_CANCELLED);
  assert.equal(cancelled.kind, "cancelled");
  assert.equal(cancelled.cause.message, "the user closed the panel");

  // A request the relay does not abandon (an install) settles with what the relay did.
  const install = new AbortController();
  const installing = client.install("/src/bundle", { trust: true }).then(() => undefined);
  const aborted = client.request("plugins/install", { source: "/src/bundle" }, { signal: install.signal });
  install.abort();
  await tick();
  feed(answer(2, null), answer(3, { id: "bundle-1", trusted: true }));
  await installing;
  assert.deepEqual(await aborted, { id: "bundle-1", trusted: true }, "the completed install is reported");

  // A signal aborted before the call sends nothing.
  const before = sent().length;
  const early = await client.invoke("slow.run", {}, { signal: AbortSignal.abort("gone") }).catch((e) => e);
  assert.ok(early instanceof CancelledError);
  assert.equal(early.cause, "gone");
  assert.equal(sent().length, before);
});

test("a closed client, a lost connection and maxPending overflow reject with typed errors", async () => {
  {
    const { client } = scripted();
    client.close();
    const closed = await client.list().catch((e) => e);
    assert.ok(closed instanceof ConnectionClosedError);
    assert.equal(closed.code, "ERR_RELAY_CLOSED");
    assert.equal(closed.kind, "connection_closed");
    assert.equal(closed.reason, "client_closed");
  }
  {
    const fromService = new PassThrough();
    const client = new RelayClient(fromService, new PassThrough());
    const pending = client.list();
    fromService.end();
    const lost = await pending.catch((e) => e);
    assert.ok(lost instanceof ConnectionClosedError);
    assert.equal(lost.reason, "relay_closed");
  }
  {
    const fromService = new PassThrough();
    const client = new RelayClient(fromService, new PassThrough());
    const pending = client.list();
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    fromService.destroy(reset);
    const lost = await pending.catch((e) => e);
    assert.ok(lost instanceof ConnectionClosedError);
    assert.equal(lost.reason, "io_error");
    assert.equal(lost.cause, reset);
  }
  {
    const { client, feed } = scripted({ maxPending: 1 });
    const first = client.list();
    const over = await client.list().catch((e) => e);
    assert.ok(over instanceof PendingLimitError);
    assert.equal(over.code, "ERR_RELAY_PENDING_LIMIT");
    assert.equal(over.limit, 1);
    feed(answer(1, []));
    assert.deepEqual(await first, []);
  }
});

test("a relay error carries its kind, hint, plugin error and diagnostics", async () => {
  const { client, feed } = scripted();
  const call = client.invoke("x.run", {});
  const data = {
    kind: "command_failed",
    hint: "look at the plugin's log",
    pluginError: { code: 7, data: { why: "no" } },
    diagnostics: [{ code: "E1", message: "bad" }],
  };
  feed(failure(1, { code: -32000, message: "x.run failed", data }));
  const error = await call.catch((e) => e);
  assert.ok(error instanceof RelayError);
  assert.deepEqual(
    [error.kind, error.hint, error.pluginError, error.diagnostics, error.method],
    [data.kind, data.hint, data.pluginError, data.diagnostics, "command/invoke"],
  );
});

test("errors say whether a retry may succeed; another caller's stop is a RuntimeStoppedError; next is structured", async () => {
  const { client, feed } = scripted();
  const stopped = client.invoke("x.run", {});
  const busy = client.subscribe("x.ping", () => {});
  const refused = client.invoke("x.run", {});
  feed(
    failure(1, { code: -32000, message: "the process was stopped", data: { kind: "cancelled", environment: false } }),
    failure(2, { code: -32003, message: "busy", data: { kind: "host_busy" } }),
    failure(3, { code: -32000, message: "not trusted", data: { kind: "not_trusted", hint: "trust it", next: { action: "trust", id: "b-1" } } }),
  );
  const error = await stopped.catch((e) => e);
  assert.ok(error instanceof RuntimeStoppedError && error instanceof RelayError);
  assert.deepEqual([error.kind, error.retryable], ["cancelled", true]);
  const overLimit = await busy.catch((e) => e);
  assert.deepEqual([overLimit.kind, overLimit.retryable], ["host_busy", true]);
  const untrusted = await refused.catch((e) => e);
  assert.deepEqual([untrusted.retryable, untrusted.next, untrusted.environment], [false, { action: "trust", id: "b-1" }, false]);
  assert.equal(new PendingLimitError(1).retryable, true);
  assert.equal(new RelayVersionError("3.0.0").retryable, false);
  assert.equal(new ConnectionClosedError("relay_closed", "gone").retryable, true);
  assert.equal(new ConnectionClosedError("client_closed", "closed").retryable, false);
});

test("the end of the connection: closed, close and error listeners, ended subscriptions and streams", async () => {
  const fromService = new PassThrough();
  const toService = new PassThrough();
  toService.resume();
  const client = new RelayClient(fromService, toService);
  const seen = [];
  client.on("close", (error) => seen.push(["close", error.reason]));
  client.on("error", (error) => seen.push(["error", error.reason]));
  const removed = client.on("close", () => seen.push(["removed listener ran"]));
  removed.dispose();
  let ended = "not yet";
  const subscribed = client.subscribe("x.ping", () => {}, { onEnd: (error) => (ended = error) });
  const stream = client.events("x.pong");
  // The first event may arrive before the subscription's answer: it is kept for it.
  fromService.write(`${JSON.stringify({ jsonrpc: "2.0", method: "events/event", params: { subscription: 8, name: "x.pong", payload: 1, dropped: 0 } })}\n`);
  fromService.write(answer(1, { subscription: 7 }));
  fromService.write(answer(2, { subscription: 8 }));
  assert.equal(await subscribed, 7);
  assert.equal(await stream.ready, 8);
  const first = await stream.next();
  assert.deepEqual([first.done, first.value.payload], [false, 1]);
  const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
  fromService.destroy(reset);
  const why = await client.closed;
  assert.ok(why instanceof ConnectionClosedError);
  assert.deepEqual([why.reason, why.errno, why.retryable], ["io_error", "ECONNRESET", true]);
  assert.deepEqual(seen, [["error", "io_error"], ["close", "io_error"]]);
  assert.equal(ended, why);
  assert.equal(await stream.ended, why);
  assert.equal(await stream.next().catch((e) => e), why, "the stream's reader sees the end");
  assert.deepEqual(await stream.next(), { value: undefined, done: true });
});
