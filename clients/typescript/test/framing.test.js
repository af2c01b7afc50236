// The client's line framing, against a scripted peer on in-memory streams (no service): answers
// split across chunks at any byte (a multi-byte character included), several answers in one
// chunk, blank lines, and a line past `maxFrameBytes`.

import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";

import { RELAY_VERSION, RelayClient, RelayVersionError, majorVersion } from "../src/index.js";

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
  await assert.rejects(client.request("a/b", {}), /maxFrameBytes/);
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
