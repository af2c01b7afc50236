// Compiled, never run: `tsc --noEmit --strict` over this file (xtask's client step) holds the
// `.d.ts` to the way a frontend uses the client, so a typing mistake fails the build.

import {
  CLIENT_METHODS,
  CancelledError,
  ConnectionClosedError,
  RelayClient,
  RelayError,
  RuntimeStoppedError,
  SpawnError,
  type NextAction,
  type RelayMethod,
  type RelayParams,
  type StoreChanged,
} from "../src/index.js";

export async function desktop(binary: string, pluginsDir: string, project: string): Promise<void> {
  const client = await RelayClient.connectOrSpawn(binary, { pluginsDir, service: "owned", readyTimeoutMs: 10_000 });
  const owned: boolean = client.service?.owned ?? false;
  const hello = await client.initialize({ name: "desktop", version: "1.0.0" }, { uiCacheKey: "desktop" });
  const methods: string[] = hello.capabilities.methods;
  const description = await client.describe();
  const cancellable: boolean = description.methods[0].cancellable;

  const installed = await client.install("reviewer", { marketplace: "community", trust: true });
  const plan = await client.plan(installed.id, { action: "enable" }, { project });
  const revision: string = (await client.apply(plan)).revision;
  await client.inherit(installed.id, project);
  const rows = await client.commands(project);
  const dormant = rows.filter((row) => row.state === "dormant").map((row) => row.name);
  const slots = await client.uiCatalog(project);
  const labels = Object.values(slots).flat().map((entry) => entry.label);
  const resolved = await client.resolveLanguage("zig", project);
  const program = resolved.kind === "plugin" ? resolved.program : resolved.builtin;
  const connectors = (await client.connectors()).map((c) => c.provider);
  await client.registerProvider("slack");
  await client.invokeConnector(installed.id, "workspace", "message.send", { text: "hi" }, { project });

  const { actions } = await client.invokeUi(installed.id, "panel", { context: { sessionId: "w1", cwd: project } });
  await client.invokeUi<{ ok: boolean }>(installed.id, "panel", { operation: "invoke", actionId: actions[0].id });

  const params: RelayParams["plugins/install"] = { source: "/src/bundle", trust: true };
  await client.request("plugins/install", params);
  const method: RelayMethod = "ui/catalog";
  const name: string = CLIENT_METHODS[method];

  const abort = new AbortController();
  try {
    await client.invoke("review.run", { path: project }, { project, signal: abort.signal });
  } catch (error) {
    if (error instanceof CancelledError) console.log(error.cause, error.retryable);
    else if (error instanceof RuntimeStoppedError) console.log(error.retryable === true);
    else if (error instanceof RelayError) {
      const next: NextAction | undefined = error.next;
      if (next?.action === "trust" && next.id) await client.trust(next.id);
      console.log(error.kind, error.hint, error.environment, error.pluginError?.code);
    } else if (error instanceof ConnectionClosedError) console.log(error.reason, error.errno);
    else if (error instanceof SpawnError) console.log(error.reason, error.failure?.kind);
  }

  for await (const event of client.events("store/changed", { signal: abort.signal })) {
    const change: StoreChanged = event.payload;
    console.log(change.installed, event.dropped);
    break;
  }
  const stream = client.events("engine/event", { maxQueued: 16 });
  await stream.ready;
  await stream.close();
  const subscription = await client.subscribe("connector/event", (event) => console.log(event.payload.connectorId), {
    onEnd: (error) => console.log(error?.message),
  });
  await client.unsubscribe(subscription);

  const listener = client.on("close", (error) => console.log(error.message));
  listener.dispose();
  const why = await client.closed;
  console.log(why.retryable, owned, methods, cancellable, revision, dormant, labels, program, connectors, name);
  client.close();
  if (client.service?.owned) await client.exited();
}
