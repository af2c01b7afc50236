// The TypeScript client's side of `cargo xtask bench`'s relay figures: connects to a running
// `c2-plugins serve --socket`, warms up until V8 has optimized the client, then times `calls`
// invokes of `command` with a `text` argument of `bytes` characters, each followed by one
// trivial relay request (`events/unsubscribe` of a subscription that does not exist: parsed,
// answered, no host work) as the local round trip. Prints one JSON line:
// {"invoke_us":[...],"round_trip_us":[...]}.
//
// usage: node bench/relay-client.mjs SOCKET COMMAND CALLS BYTES

import { RelayClient } from "../clients/typescript/src/index.js";

const [socket, command, callsText, bytesText] = process.argv.slice(2);
const calls = Number(callsText);
const text = "x".repeat(Number(bytesText));
if (!socket || !command || !(calls > 0)) {
  console.error("usage: node bench/relay-client.mjs SOCKET COMMAND CALLS BYTES");
  process.exit(2);
}

const micros = (start) => Number(process.hrtime.bigint() - start) / 1000;

// Calls of each kind made before timing. A frontend is a long-lived process whose relay code
// V8 has long since optimized; a fresh node runs it in its interpreter and baseline tiers for
// the first thousand or so calls, which then cost two to three times as much JS per call, and
// more for the invoke (a larger object built and parsed) than for the round trip. Timing from
// the tenth call measured V8's tier-up, not the relay (docs/reports/2026-12-01-performance-levers.md,
// "Levers, the evening of 2026-12-01").
const WARMUP_CALLS = 2000;

const client = await RelayClient.connect(socket);
try {
  await client.initialize({ name: "c2-bench", version: "1.0.0" });
  for (let i = 0; i < WARMUP_CALLS; i++) {
    await client.invoke(command, { text });
    await client.unsubscribe(0);
  }
  const invoke_us = [];
  const round_trip_us = [];
  for (let i = 0; i < calls; i++) {
    let start = process.hrtime.bigint();
    const answer = await client.invoke(command, { text });
    invoke_us.push(micros(start));
    if (answer?.text?.length !== text.length) {
      throw new Error(`the relay echoed ${JSON.stringify(answer).length} bytes, not the args`);
    }
    start = process.hrtime.bigint();
    await client.unsubscribe(0);
    round_trip_us.push(micros(start));
  }
  process.stdout.write(`${JSON.stringify({ invoke_us, round_trip_us })}\n`);
} finally {
  client.close();
}
