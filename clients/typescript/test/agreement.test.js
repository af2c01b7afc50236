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

/** The `.d.ts`'s `RelayParams`: each method's param names, and which are required. */
function typedParams() {
  const types = read("../src/index.d.ts");
  const body = /export interface RelayParams \{\n([\s\S]*?)\n\}/.exec(types);
  assert.ok(body, "index.d.ts declares `RelayParams`");
  const params = {};
  for (const line of body[1].split("\n")) {
    const entry = /^\s*"([^"]+)":\s*\{(.*)\};\s*$/.exec(line);
    if (!entry) continue;
    const fields = entry[2]
      .split(";")
      .map((field) => /^\s*([A-Za-z]+)(\?)?:/.exec(field))
      .filter(Boolean);
    params[entry[1]] = {
      properties: sorted(fields.map((field) => field[1])),
      required: sorted(fields.filter((field) => !field[2]).map((field) => field[1])),
    };
  }
  return params;
}

/** The members the `.d.ts` declares on `class RelayClient`. */
function typedMembers() {
  const types = read("../src/index.d.ts");
  const body = /export declare class RelayClient \{\n([\s\S]*?)\n\}/.exec(types);
  assert.ok(body, "index.d.ts declares `class RelayClient`");
  return new Set([...body[1].matchAll(/^\s*(?:static\s+)?(?:readonly\s+)?([A-Za-z]+)\s*[<(:]/gm)].map((m) => m[1]));
}

test("every relay method has a typed client method, with the params docs/schemas/relay.json describes", async () => {
  const { CANCELLABLE, CLIENT_METHODS, RelayClient } = await import("../src/index.js");
  const described = JSON.parse(read("../../../docs/schemas/relay.json")).methods;
  assert.deepEqual(sorted(Object.keys(CLIENT_METHODS)), sorted(described.map((m) => m.name)), "CLIENT_METHODS against relay.json");
  const members = typedMembers();
  const params = typedParams();
  for (const method of described) {
    const name = CLIENT_METHODS[method.name];
    const fn = RelayClient.prototype[name];
    assert.equal(typeof fn, "function", `RelayClient has no method ${name} for ${method.name}`);
    assert.ok(fn.toString().includes(`"${method.name}"`), `RelayClient.${name} does not send ${method.name}`);
    assert.ok(members.has(name), `index.d.ts does not declare RelayClient.${name} (${method.name})`);
    const typed = params[method.name];
    assert.ok(typed, `index.d.ts RelayParams has no entry for ${method.name}`);
    assert.deepEqual(typed.properties, sorted(Object.keys(method.params.properties ?? {})), `${method.name}: param names`);
    assert.deepEqual(typed.required, sorted(method.params.required ?? []), `${method.name}: required params`);
  }
  assert.deepEqual(sorted(Object.keys(params)), sorted(described.map((m) => m.name)), "RelayParams has no extra entry");
  assert.deepEqual(sorted(CANCELLABLE), sorted(described.filter((m) => m.cancellable).map((m) => m.name)), "CANCELLABLE");
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
