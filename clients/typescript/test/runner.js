// The test runner of the runtime the suite runs on: node:test under `node --test`, bun:test
// under `bun test`. `test(name, fn, ms)` gives each test `ms` to finish on both.

const bun = globalThis.Bun !== undefined;
const runner = bun ? await import("bun:test") : await import("node:test");

/** Whether the suite runs under Bun. */
export const underBun = bun;

/** Declares a test that may take up to `ms` milliseconds. */
export function test(name, fn, ms = 180_000) {
  return bun ? runner.test(name, fn, ms) : runner.test(name, { timeout: ms }, fn);
}
