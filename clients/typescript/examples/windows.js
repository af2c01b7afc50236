// Two windows of a desktop on one socket service. Each window renders a host.actions descriptor
// under its own session (with the session's directory) and invokes the item it rendered; one
// window cancels a long call and retries at once. The bundles are installed, trusted and
// enabled already (quickstart.js shows how).
//
//   C2_PLUGINS_BIN=/path/to/c2-plugins node examples/windows.js PLUGINS_DIR BUNDLE_ID UI_ID \
//     COMMAND LONG_ARGS_JSON SHORT_ARGS_JSON
//
// Prints one JSON line per step. The client's test suite runs it against a real service.

import { CancelledError, RelayClient } from "@codetwo/c2-plugins-relay";

const [pluginsDir, bundle, ui, command, longArgs, shortArgs] = process.argv.slice(2);
if (!shortArgs) {
  console.error("usage: windows.js PLUGINS_DIR BUNDLE_ID UI_ID COMMAND LONG_ARGS_JSON SHORT_ARGS_JSON");
  process.exit(2);
}
/** One line of output. @param {string} name @param {object} value */
const step = (name, value) => console.log(JSON.stringify({ step: name, ...value }));
const binary = process.env.C2_PLUGINS_BIN ?? "c2-plugins";

// The first window starts the service (and owns it); the second joins it.
const first = await RelayClient.connectOrSpawn(binary, { pluginsDir });
const second = await RelayClient.connectOrSpawn(binary, { pluginsDir });
step("windows", { firstSpawned: first.service?.spawned, secondSpawned: second.service?.spawned });
try {
  await first.initialize({ name: "window-1", version: "1.0.0" });
  await second.initialize({ name: "window-2", version: "1.0.0" });

  // Each window's session: its renders are its own, and its directory reaches the plugin.
  for (const { window, client } of [
    { window: "window-1", client: first },
    { window: "window-2", client: second },
  ]) {
    /** @type {import("@codetwo/c2-plugins-relay").UiContext} */
    const context = { sessionId: window, cwd: process.cwd() };
    const { actions } = await client.invokeUi(bundle, ui, { context });
    const result = await client.invokeUi(bundle, ui, { operation: "invoke", actionId: actions[0].id, context });
    step("invoked", { window, action: actions[0].id, result });
  }

  // Cancel a long call; the next call starts the runtime again at once.
  const abort = new AbortController();
  const long = first.invoke(command, JSON.parse(longArgs), { signal: abort.signal });
  await new Promise((resolve) => setTimeout(resolve, 300));
  abort.abort(new Error("the user closed the panel"));
  const cancelled = await long.catch((error) => error);
  step("cancelled", {
    cancelled: cancelled instanceof CancelledError,
    cause: cancelled instanceof Error && cancelled.cause instanceof Error ? cancelled.cause.message : null,
  });
  step("retried", { result: await first.invoke(command, JSON.parse(shortArgs)) });
} finally {
  second.close();
  first.close();
  if (first.service?.owned) step("exited", { code: await first.exited() });
}
