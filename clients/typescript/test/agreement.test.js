// docs/relay.md, the relay's description document (docs/schemas/relay.json), the `.d.ts` and
// the client name the same relay methods: none of them may drift from the others.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { test } from "./runner.js";

const read = (path) => readFileSync(new URL(path, import.meta.url), "utf8");
const sorted = (names) => [...new Set(names)].sort();

/** The method names in backticks in the headings of docs/relay.md. */
function documented() {
  const names = [];
  for (const line of read("../../../docs/relay.md").split("\n")) {
    if (!line.startsWith("#")) continue;
    for (const [, name] of line.matchAll(/`([a-z]+\/[A-Za-z]+)`/g)) names.push(name);
  }
  return sorted(names);
}

/** The members of the `.d.ts`'s `RelayMethod` union. */
function typed() {
  const types = read("../src/index.d.ts");
  const union = /export type RelayMethod =([^;]*);/.exec(types);
  assert.ok(union, "index.d.ts declares `RelayMethod`");
  return sorted([...union[1].matchAll(/"([^"]+)"/g)].map((match) => match[1]));
}

test("docs/relay.md, docs/schemas/relay.json and the .d.ts name the same relay methods", () => {
  const described = sorted(JSON.parse(read("../../../docs/schemas/relay.json")).methods.map((m) => m.name));
  assert.deepEqual(documented(), described, "docs/relay.md headings against docs/schemas/relay.json");
  assert.deepEqual(typed(), described, "index.d.ts RelayMethod against docs/schemas/relay.json");
  // Every method the client sends by name is one the relay answers.
  const client = read("../src/index.js");
  const sent = [...client.matchAll(/request\(\s*[`"]([a-z]+\/[A-Za-z$]+)[`"]/g)].map((match) => match[1]);
  assert.ok(sent.length > 20, `the client's methods were found (${sent.length})`);
  for (const name of sent) assert.ok(described.includes(name), `the client sends ${name}, which the relay does not describe`);
});

test("docs/relay.md, docs/schemas/relay.json and the .d.ts name the same bundle states", () => {
  const described = sorted(JSON.parse(read("../../../docs/schemas/relay.json")).bundleStates);
  assert.ok(described.includes("blocked"), "the description lists the bundle states");
  const union = /\n  state: ([^;]*);/.exec(read("../src/index.d.ts"));
  assert.ok(union, "index.d.ts declares BundleStatus.state");
  const typed = sorted([...union[1].matchAll(/"([^"]+)"/g)].map((match) => match[1]));
  assert.deepEqual(typed, described, "index.d.ts BundleStatus.state against docs/schemas/relay.json");
  const docs = read("../../../docs/relay.md");
  const section = docs.slice(docs.indexOf("### `plugins/list`"), docs.indexOf("### `plugins/install`"));
  for (const state of described) assert.ok(section.includes(`\`${state}\``), `docs/relay.md's plugins/list names ${state}`);
});
