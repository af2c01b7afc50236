// The README's flow, end to end: start or join the socket service of a plugins directory,
// install a bundle, trust it, enable it in one project, see that project's commands and UI
// descriptors before anything ran, invoke a command there, watch store changes as an async
// iterator, and close with nothing left running.
//
//   C2_PLUGINS_BIN=/path/to/c2-plugins node examples/quickstart.js PLUGINS_DIR BUNDLE PROJECT COMMAND
//
// Prints one JSON line per step. The client's test suite runs it against a real service, and
// xtask type-checks it against the `.d.ts`.

import { RelayClient, RelayError } from "@codetwo/c2-plugins-relay";

const [pluginsDir, bundle, project, command] = process.argv.slice(2);
if (!command) {
  console.error("usage: quickstart.js PLUGINS_DIR BUNDLE PROJECT COMMAND");
  process.exit(2);
}
/** One line of output. @param {string} name @param {object} value */
const step = (name, value) => console.log(JSON.stringify({ step: name, ...value }));

// Joins a service already serving the directory, or starts one this process owns.
const client = await RelayClient.connectOrSpawn(process.env.C2_PLUGINS_BIN ?? "c2-plugins", { pluginsDir });
step("service", { spawned: client.service?.spawned, owned: client.service?.owned });
try {
  await client.initialize({ name: "quickstart", version: "1.0.0" });

  // Store changes, whoever makes them, as an async iterator; closed at the end.
  const changes = client.events("store/changed");
  await changes.ready;

  const installed = await client.install(bundle);
  step("installed", { id: installed.id, trusted: installed.trusted });
  for await (const event of changes) {
    if (event.payload.installed.includes(installed.id)) break;
  }

  // Untrusted, the command is refused with a structured next action beside the hint.
  const refused = await client.invoke(command, { cwd: project }, { project }).catch((error) => error);
  if (!(refused instanceof RelayError)) throw new Error(`expected a refusal, got ${JSON.stringify(refused)}`);
  step("refused", { kind: refused.kind, next: refused.next });
  if (refused.next?.action === "trust" && refused.next.id) await client.trust(refused.next.id);

  // Enabled in the project only: its commands and descriptors are listed before first use.
  await client.enable(installed.id, project);
  const commands = await client.commands(project);
  const row = commands.find((c) => c.name === command);
  step("listed", { command: row?.name, state: row?.state });
  const ui = await client.uiCatalog(project);
  step("ui", { slots: Object.keys(ui).sort() });

  const result = await client.invoke(command, { cwd: project }, { project });
  step("invoked", { result });
} finally {
  client.close();
  // A service this process started is stopped by `close()`; wait for it to be gone.
  if (client.service?.owned) step("exited", { code: await client.exited() });
}
