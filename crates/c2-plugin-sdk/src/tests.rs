//! The SDK driven in memory by a c2-protocol peer playing the host.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use c2_protocol::{
    CallError, DeclaredCommand, InitializeResult, Notification, Notifications, Peer, PeerOptions,
    RejectRequests, Request, RequestHandler, confirm_commands, method,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

use crate::{CommandError, Context, Error, LogLayer, Plugin, RunOptions};

const MANIFEST: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "demo",
  "version": "1.2.3",
  "extensions": {
    "dev.codetwo": {
      "standardVersion": "1.2.0",
      "commands": [
        {
          "id": "demo.greet",
          "title": "Greet",
          "description": "Greets someone.",
          "argsSchema": {
            "type": "object",
            "properties": { "name": { "type": "string" } },
            "additionalProperties": false
          }
        },
        { "id": "demo.count", "title": "Count", "argsSchema": { "type": "object" } },
        { "id": "demo.plain", "title": "No schema" }
      ],
      "runtime": { "protocol": "1.0.0", "command": "bin/demo" }
    }
  }
}"#;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
struct GreetArgs {
    name: Option<String>,
}

#[derive(Deserialize)]
struct CountArgs {
    n: u32,
}

async fn greet(_ctx: Context, args: GreetArgs) -> Result<Value, CommandError> {
    let name = args.name.unwrap_or_else(|| "world".to_owned());
    Ok(json!({ "greeting": format!("Hello, {name}!") }))
}

async fn count(_ctx: Context, args: CountArgs) -> Result<u32, CommandError> {
    Ok(args.n + 1)
}

async fn plain(_ctx: Context, args: Value) -> Result<Value, CommandError> {
    Ok(args)
}

/// A plugin with every declared command bound to a simple handler.
fn demo() -> Plugin {
    Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count)
        .command("demo.plain", plain)
}

struct Host {
    peer: Peer,
    notifications: Notifications,
    run: JoinHandle<Result<(), Error>>,
}

impl Host {
    fn start(plugin: Plugin, handler: impl RequestHandler) -> Host {
        let (host_out, plugin_in) = tokio::io::duplex(64 * 1024);
        let (plugin_out, host_in) = tokio::io::duplex(64 * 1024);
        let run = tokio::spawn(plugin.run_with(plugin_in, plugin_out));
        let (peer, notifications) = Peer::new(host_in, host_out, handler, PeerOptions::default());
        Host {
            peer,
            notifications,
            run,
        }
    }

    async fn initialize(&self, host_commands: &[&str]) -> InitializeResult {
        let params = json!({
            "protocolVersion": "1.0.0",
            "host": { "name": "test-host", "version": "0.0.0", "commands": host_commands },
            "config": { "greeting": "hi" },
            "dataDir": "/data/demo",
            "projectPath": "/work/project"
        });
        let answer = within(self.peer.request(method::INITIALIZE, Some(params)))
            .await
            .unwrap();
        serde_json::from_value(answer).unwrap()
    }

    async fn invoke(&self, name: &str, args: Value) -> Result<Value, CallError> {
        let params = json!({ "name": name, "args": args });
        within(self.peer.request(method::COMMAND_INVOKE, Some(params))).await
    }

    async fn emit(&self, name: &str, payload: Value) {
        let params = json!({ "name": name, "payload": payload });
        self.peer
            .notify(method::EVENT_EMIT, Some(params))
            .await
            .unwrap();
    }

    async fn next_notification(&mut self) -> Notification {
        within(self.notifications.recv()).await.unwrap()
    }

    /// Closes the plugin's stdin and waits for `run_with` to return.
    async fn finish(self) -> Result<(), Error> {
        self.peer.close();
        within(self.run).await.unwrap()
    }
}

async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .expect("the plugin did not answer in time")
}

fn remote(error: CallError) -> c2_protocol::ErrorObject {
    match error {
        CallError::Remote(e) => e,
        other => panic!("expected an error answer, got {other:?}"),
    }
}

#[tokio::test]
async fn the_initialize_answer_confirms_exactly_the_manifest() {
    let host = Host::start(
        demo().on_event("skills/changed", |_, _| async {}),
        RejectRequests,
    );
    let result = host.initialize(&[]).await;
    assert_eq!(result.name, "demo");
    assert_eq!(result.version, "1.2.3");
    assert_eq!(result.protocol_version.as_deref(), Some("1.0.0"));
    assert_eq!(result.events, ["skills/changed"]);
    let manifest: Value = serde_json::from_str(MANIFEST).unwrap();
    let declared: Vec<DeclaredCommand> = manifest["extensions"]["dev.codetwo"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| DeclaredCommand {
            id: c["id"].as_str().unwrap().to_owned(),
            args_schema: c.get("argsSchema").cloned(),
        })
        .collect();
    confirm_commands(&declared, &result).unwrap();
    let names: Vec<&str> = result.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["demo.greet", "demo.count", "demo.plain"]);
    assert_eq!(result.commands[2].schema, None);
    host.finish().await.unwrap();
}

#[tokio::test]
async fn a_declared_command_without_a_handler_refuses_to_start() {
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count);
    let (reader, writer) = tokio::io::duplex(1024);
    let error = plugin.run_with(reader, writer).await.unwrap_err();
    let Error::Handlers {
        missing,
        undeclared,
        duplicated,
    } = &error
    else {
        panic!("expected a handler mismatch, got {error}");
    };
    assert_eq!(missing, &["demo.plain"]);
    assert!(undeclared.is_empty() && duplicated.is_empty());
    assert!(
        error.to_string().contains("no handler bound: `demo.plain`"),
        "{error}"
    );
}

#[tokio::test]
async fn a_handler_for_an_undeclared_command_refuses_to_start() {
    let plugin = demo().command("demo.extra", plain);
    let (reader, writer) = tokio::io::duplex(1024);
    let error = plugin.run_with(reader, writer).await.unwrap_err();
    assert!(
        matches!(&error, Error::Handlers { undeclared, .. } if undeclared == &["demo.extra"]),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("not declared in plugin.json: `demo.extra`")
    );
}

#[tokio::test]
async fn a_command_bound_twice_refuses_to_start() {
    let plugin = demo().command("demo.greet", greet);
    let (reader, writer) = tokio::io::duplex(1024);
    let error = plugin.run_with(reader, writer).await.unwrap_err();
    assert!(
        matches!(&error, Error::Handlers { duplicated, .. } if duplicated == &["demo.greet"]),
        "{error}"
    );
}

#[test]
fn an_invalid_manifest_is_refused_with_its_diagnostics() {
    let error = Plugin::from_manifest_text(r#"{"name": "demo"}"#).unwrap_err();
    assert!(matches!(error, Error::InvalidManifest { .. }));
    let message = format!("{error:?}");
    assert!(
        message.starts_with("plugin.json is not a valid manifest"),
        "{message}"
    );
    assert!(message.contains("--> plugin.json:"), "{message}");
}

#[tokio::test]
async fn a_typed_handler_answers_with_its_serialized_result() {
    let host = Host::start(demo(), RejectRequests);
    host.initialize(&[]).await;
    let answer = host
        .invoke("demo.greet", json!({ "name": "Ada" }))
        .await
        .unwrap();
    assert_eq!(answer, json!({ "greeting": "Hello, Ada!" }));
    assert_eq!(
        host.invoke("demo.count", json!({ "n": 41 })).await.unwrap(),
        json!(42)
    );
    host.finish().await.unwrap();
}

#[tokio::test]
async fn absent_args_reach_the_handler_as_an_empty_object() {
    let host = Host::start(demo(), RejectRequests);
    host.initialize(&[]).await;
    let answer = host.invoke("demo.greet", Value::Null).await.unwrap();
    assert_eq!(answer, json!({ "greeting": "Hello, world!" }));
    assert_eq!(
        host.invoke("demo.plain", Value::Null).await.unwrap(),
        json!({})
    );
    host.finish().await.unwrap();
}

#[tokio::test]
async fn invoke_params_of_the_wrong_shape_are_refused_as_invalid_params() {
    let host = Host::start(demo(), RejectRequests);
    host.initialize(&[]).await;
    for params in [
        None,
        Some(json!({ "args": {} })),
        Some(json!({ "name": 7, "args": {} })),
        Some(json!([1, 2])),
    ] {
        let error = remote(
            within(host.peer.request(method::COMMAND_INVOKE, params.clone()))
                .await
                .unwrap_err(),
        );
        assert_eq!(error.code, -32602, "{params:?}");
        assert!(
            error.message.starts_with("invalid command/invoke params: "),
            "{params:?}: {}",
            error.message
        );
    }
    // A big string arg reaches the handler and comes back whole.
    let text = "x".repeat(64 * 1024);
    assert_eq!(
        host.invoke("demo.plain", json!({ "text": text }))
            .await
            .unwrap(),
        json!({ "text": text })
    );
    host.finish().await.unwrap();
}

#[tokio::test]
async fn args_violating_the_schema_are_refused_naming_the_path_before_the_handler_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", move |ctx, args: GreetArgs| {
            counted.fetch_add(1, Ordering::SeqCst);
            greet(ctx, args)
        })
        .command("demo.count", count)
        .command("demo.plain", plain);
    let host = Host::start(plugin, RejectRequests);
    host.initialize(&[]).await;
    let error = remote(
        host.invoke("demo.greet", json!({ "name": 5 }))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("`/name`"), "{}", error.message);
    let data = val(error.data);
    assert_eq!(data["violations"][0]["instancePath"], "/name");
    assert_eq!(data["violations"][0]["schemaPath"], "/properties/name/type");

    let error = remote(
        host.invoke("demo.greet", json!({ "nom": "x" }))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("the top level"), "{}", error.message);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    host.finish().await.unwrap();
}

#[tokio::test]
async fn args_the_handler_type_cannot_take_are_refused_naming_the_path() {
    let host = Host::start(demo(), RejectRequests);
    host.initialize(&[]).await;
    let error = remote(
        host.invoke("demo.count", json!({ "n": "many" }))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("`/n`"), "{}", error.message);
    assert_eq!(val(error.data)["violations"][0]["instancePath"], "/n");
    host.finish().await.unwrap();
}

#[tokio::test]
async fn a_handler_error_reaches_the_host_with_its_code_and_message() {
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", |_ctx, _args: GreetArgs| async {
            Err::<Value, _>(CommandError::new("nobody to greet").with_data(json!({ "hint": 1 })))
        })
        .command("demo.count", |_ctx, _args: CountArgs| async {
            Err::<u32, _>(CommandError::invalid_params("n must be even"))
        })
        .command("demo.plain", plain);
    let host = Host::start(plugin, RejectRequests);
    host.initialize(&[]).await;
    let error = remote(host.invoke("demo.greet", json!({})).await.unwrap_err());
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32000, "nobody to greet")
    );
    assert_eq!(val(error.data), json!({ "hint": 1 }));
    let error = remote(
        host.invoke("demo.count", json!({ "n": 1 }))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32602, "n must be even")
    );
    host.finish().await.unwrap();
}

#[tokio::test]
async fn an_invocation_before_initialize_or_of_an_unknown_command_is_refused() {
    let host = Host::start(demo(), RejectRequests);
    let error = remote(host.invoke("demo.greet", json!({})).await.unwrap_err());
    assert_eq!(error.code, -32600);
    host.initialize(&[]).await;
    let error = remote(host.invoke("demo.nope", json!({})).await.unwrap_err());
    assert_eq!(error.code, -32001);
    assert!(error.message.contains("demo.nope"), "{}", error.message);
    let error = remote(
        within(host.peer.request("initialize", Some(json!({}))))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, -32602);
    host.finish().await.unwrap();
}

#[tokio::test]
async fn a_host_of_another_major_protocol_version_is_refused() {
    let host = Host::start(demo(), RejectRequests);
    let params = json!({
        "protocolVersion": "2.0.0",
        "host": { "name": "h", "version": "0" },
        "dataDir": "/d"
    });
    let error = remote(
        within(host.peer.request("initialize", Some(params)))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, -32602);
    assert!(
        error.message.contains("protocol 1.0.0"),
        "{}",
        error.message
    );
    host.finish().await.unwrap();
}

#[tokio::test]
async fn the_context_carries_the_initialize_params() {
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count)
        .command("demo.plain", |ctx: Context, _args: Value| async move {
            Ok::<_, CommandError>(json!({
                "hostCommands": ctx.host_commands(),
                "hasGitStatus": ctx.has_host_command("git.status"),
                "config": ctx.config(),
                "dataDir": ctx.data_dir(),
                "projectPath": ctx.project_path(),
            }))
        });
    let host = Host::start(plugin, RejectRequests);
    host.initialize(&["git.status"]).await;
    let answer = host.invoke("demo.plain", json!({})).await.unwrap();
    assert_eq!(
        answer,
        json!({
            "hostCommands": ["git.status"],
            "hasGitStatus": true,
            "config": { "greeting": "hi" },
            "dataDir": "/data/demo",
            "projectPath": "/work/project",
        })
    );
    host.finish().await.unwrap();
}

/// Raw params, a result or error data read as a value (`null` when absent).
fn val(raw: Option<c2_protocol::RawJson>) -> Value {
    c2_protocol::from_raw(raw.as_deref()).unwrap()
}

/// Answers `command/call` for `git.status` with the cwd it was asked about.
async fn git_status_host(request: Request, _peer: Peer) -> Result<Value, c2_protocol::ErrorObject> {
    let params = val(request.params);
    match (request.method.as_str(), params["name"].as_str()) {
        ("command/call", Some("git.status")) => {
            Ok(json!({ "branch": "main", "cwd": params["args"]["cwd"] }))
        }
        _ => Err(c2_protocol::ErrorObject::new(-32001, "unknown command")),
    }
}

#[tokio::test]
async fn a_handler_calls_back_into_the_host_and_concurrent_calls_stay_correlated() {
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", |ctx: Context, args: GreetArgs| async move {
            let cwd = args.name.unwrap_or_default();
            let status = ctx.call("git.status", json!({ "cwd": cwd })).await?;
            Ok::<_, CommandError>(status)
        })
        .command("demo.count", count)
        .command("demo.plain", |ctx: Context, _args: Value| async move {
            ctx.call("git.push", json!({})).await?;
            Ok::<_, CommandError>(Value::Null)
        });
    let host = Host::start(plugin, git_status_host);
    host.initialize(&["git.status"]).await;
    let calls = (0..8).map(|i| host.invoke("demo.greet", json!({ "name": format!("/repo/{i}") })));
    let answers = futures_join_all(calls).await;
    for (i, answer) in answers.into_iter().enumerate() {
        assert_eq!(
            answer.unwrap(),
            json!({ "branch": "main", "cwd": format!("/repo/{i}") })
        );
    }
    let error = remote(host.invoke("demo.plain", json!({})).await.unwrap_err());
    assert_eq!(error.code, -32000);
    assert!(
        error.message.contains("unknown command"),
        "{}",
        error.message
    );
    host.finish().await.unwrap();
}

/// Polls every future together on this task, like `futures::future::join_all`.
async fn futures_join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for future in futures {
        set.push(Box::pin(future));
    }
    let mut results: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, slot) in set.iter_mut().zip(results.iter_mut()) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(out) => *slot = Some(out),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    results.into_iter().map(Option::unwrap).collect()
}

#[tokio::test]
async fn handlers_run_concurrently() {
    let gate = Arc::new(Notify::new());
    let (waiter, opener) = (Arc::clone(&gate), gate);
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", move |_ctx, _args: GreetArgs| {
            let gate = Arc::clone(&waiter);
            async move {
                gate.notified().await;
                Ok::<_, CommandError>("opened")
            }
        })
        .command("demo.count", count)
        .command("demo.plain", move |_ctx, _args: Value| {
            let gate = Arc::clone(&opener);
            async move {
                gate.notify_one();
                Ok::<_, CommandError>("opening")
            }
        });
    let host = Host::start(plugin, RejectRequests);
    host.initialize(&[]).await;
    let (first, second) = tokio::join!(
        host.invoke("demo.greet", json!({})),
        host.invoke("demo.plain", json!({}))
    );
    assert_eq!(
        (first.unwrap(), second.unwrap()),
        (json!("opened"), json!("opening"))
    );
    host.finish().await.unwrap();
}

#[tokio::test]
async fn events_reach_only_the_subscribed_handlers() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let (a, b) = (seen_tx.clone(), seen_tx);
    let plugin = demo()
        .on_event("skills/changed", move |_ctx, payload| {
            let seen = a.clone();
            async move {
                let _ = seen.send(("skills/changed", payload));
            }
        })
        .on_event("engine/event", move |_ctx, payload| {
            let seen = b.clone();
            async move {
                let _ = seen.send(("engine/event", payload));
            }
        });
    let mut host = Host::start(plugin, RejectRequests);
    let result = host.initialize(&[]).await;
    assert_eq!(result.events, ["engine/event", "skills/changed"]);
    host.emit("scenes/changed", Value::Null).await;
    host.emit("skills/changed", json!(1)).await;
    host.emit("engine/event", json!({ "kind": "turn" })).await;
    let mut got = vec![
        within(seen.recv()).await.unwrap(),
        within(seen.recv()).await.unwrap(),
    ];
    got.sort_by_key(|(name, _)| *name);
    assert_eq!(
        got,
        [
            ("engine/event", json!({ "kind": "turn" })),
            ("skills/changed", json!(1))
        ]
    );
    // A round trip after the unsubscribed event: had it been dispatched, it would be queued now.
    host.invoke("demo.plain", json!({})).await.unwrap();
    assert!(seen.try_recv().is_err());
    assert!(host.notifications.try_recv().is_none());
    host.finish().await.unwrap();
}

#[tokio::test]
async fn a_handler_emits_an_event_to_the_host() {
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", |ctx: Context, _args: GreetArgs| async move {
            ctx.emit("demo/greeted", json!({ "who": "Ada" })).await?;
            Ok::<_, CommandError>(Value::Null)
        })
        .command("demo.count", count)
        .command("demo.plain", plain);
    let mut host = Host::start(plugin, RejectRequests);
    host.initialize(&[]).await;
    host.invoke("demo.greet", json!({})).await.unwrap();
    let event = host.next_notification().await;
    assert_eq!(event.method, "event/emit");
    assert_eq!(
        val(event.params),
        json!({ "name": "demo/greeted", "payload": { "who": "Ada" } })
    );
    host.finish().await.unwrap();
}

/// The demo plugin with `greet` bound to `demo.greet` and its logs forwarded through `handle`,
/// initialized and past one `demo.greet` invocation.
async fn greeted_with_logs<F, Fut>(greet: F, handle: &crate::LogHandle) -> Host
where
    F: Fn(Context, GreetArgs) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value, CommandError>> + Send + 'static,
{
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count)
        .command("demo.plain", plain)
        .log_handle(handle.clone());
    let host = Host::start(plugin, RejectRequests);
    host.initialize(&[]).await;
    host.invoke("demo.greet", json!({ "name": "Ada" }))
        .await
        .unwrap();
    host
}

#[tokio::test]
async fn tracing_events_are_forwarded_as_log_notifications_up_to_the_level() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let (layer, handle) = LogLayer::new(tracing::Level::INFO);
    // The test runtime is single-threaded, so every task sees this thread's default.
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let greet = |_ctx, args: GreetArgs| async move {
        tracing::debug!("not forwarded at info");
        tracing::info!(who = args.name.as_deref().unwrap_or("?"), "greeting");
        tracing::warn!("done");
        Ok::<_, CommandError>(Value::Null)
    };
    let mut host = greeted_with_logs(greet, &handle).await;
    let first = host.next_notification().await;
    let second = host.next_notification().await;
    assert_eq!(first.method, "log");
    assert_eq!(
        val(first.params),
        json!({ "level": "info", "message": "greeting who=Ada" })
    );
    assert_eq!(
        val(second.params),
        json!({ "level": "warn", "message": "done" })
    );
    assert_eq!(handle.dropped(), 0);
    host.finish().await.unwrap();
}

#[tokio::test]
async fn the_subscriber_run_installs_forwards_events_inside_spans_and_keeps_none() {
    use tracing::Instrument as _;
    use tracing_subscriber::Layer as _;
    let (layer, handle) = LogLayer::new(tracing::Level::INFO);
    // The layer's level is its hint, so `tracing` skips a debug callsite up front.
    assert_eq!(
        tracing_subscriber::Layer::<crate::log::EventsOnly>::max_level_hint(&layer),
        Some(tracing::level_filters::LevelFilter::INFO)
    );
    // What `Plugin::run` installs globally, set for this thread only.
    let subscriber = layer.with_subscriber(crate::log::EventsOnly::new());
    let _guard = tracing::subscriber::set_default(subscriber);
    let greet = |_ctx, args: GreetArgs| async move {
        let outer = tracing::info_span!("outer", who = args.name.as_deref());
        let _entered = outer.enter();
        let inner = tracing::info_span!("inner");
        assert_ne!(outer.id(), inner.id(), "every span gets its own id");
        async {
            tracing::debug!("not forwarded at info");
            tracing::info!("inside both spans");
        }
        .instrument(inner)
        .await;
        Ok::<_, CommandError>(Value::Null)
    };
    let mut host = greeted_with_logs(greet, &handle).await;
    let forwarded = host.next_notification().await;
    assert_eq!(forwarded.method, "log");
    assert_eq!(
        val(forwarded.params),
        json!({ "level": "info", "message": "inside both spans" })
    );
    host.finish().await.unwrap();
}

#[test]
fn span_ids_of_the_run_subscriber_are_never_zero_even_when_the_counter_wraps() {
    let dispatch = tracing::Dispatch::new(crate::log::EventsOnly::new());
    tracing::dispatcher::with_default(&dispatch, || {
        let first = tracing::info_span!("first");
        let second = tracing::info_span!("second");
        assert!(first.id().is_some());
        assert_ne!(first.id(), second.id());
        let subscriber = dispatch.downcast_ref::<crate::log::EventsOnly>().unwrap();
        subscriber.wrap_to_zero_for_tests();
        let wrapped = tracing::info_span!("wrapped");
        assert_eq!(wrapped.id().map(|id| id.into_u64()), Some(1));
    });
}

#[tokio::test]
async fn log_events_beyond_the_queue_are_dropped_and_counted() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let (layer, handle) = LogLayer::new(tracing::Level::INFO);
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", |_ctx, args: CountArgs| async move {
            // Logged without yielding, so the forwarder cannot drain the queue meanwhile.
            for i in 0..args.n {
                tracing::info!(i, "line");
            }
            Ok::<_, CommandError>(args.n)
        })
        .command("demo.plain", plain)
        .with_options(RunOptions {
            log_queue: 2,
            ..RunOptions::default()
        })
        .log_handle(handle.clone());
    let mut host = Host::start(plugin, RejectRequests);
    host.initialize(&[]).await;
    host.invoke("demo.count", json!({ "n": 10 })).await.unwrap();
    assert_eq!(handle.dropped(), 8);
    let first = host.next_notification().await;
    assert_eq!(val(first.params)["message"], "line i=0");
    host.finish().await.unwrap();
}

#[tokio::test]
async fn closing_stdin_ends_the_run_after_in_flight_handlers_finish() {
    let finished = Arc::new(AtomicUsize::new(0));
    let done = Arc::clone(&finished);
    let started = Arc::new(Notify::new());
    let signal = Arc::clone(&started);
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count)
        .command("demo.plain", move |_ctx, _args: Value| {
            let (done, signal) = (Arc::clone(&done), Arc::clone(&signal));
            async move {
                signal.notify_one();
                tokio::time::sleep(Duration::from_millis(50)).await;
                done.fetch_add(1, Ordering::SeqCst);
                Ok::<_, CommandError>(Value::Null)
            }
        })
        .with_options(RunOptions {
            shutdown_grace: WAIT,
            ..RunOptions::default()
        });
    let host = Host::start(plugin, RejectRequests);
    host.initialize(&[]).await;
    let peer = host.peer.clone();
    let call = tokio::spawn(async move {
        peer.request("command/invoke", Some(json!({ "name": "demo.plain" })))
            .await
    });
    within(started.notified()).await;
    host.finish().await.unwrap();
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    assert!(matches!(
        within(call).await.unwrap(),
        Err(CallError::Closed(_))
    ));
}

#[tokio::test]
async fn a_handler_that_outlives_the_grace_does_not_hold_the_run() {
    let started = Arc::new(Notify::new());
    let signal = Arc::clone(&started);
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count)
        .command("demo.plain", move |_ctx, _args: Value| {
            let signal = Arc::clone(&signal);
            async move {
                signal.notify_one();
                std::future::pending::<()>().await;
                Ok::<_, CommandError>(Value::Null)
            }
        })
        .with_options(RunOptions {
            shutdown_grace: Duration::from_millis(10),
            ..RunOptions::default()
        });
    let host = Host::start(plugin, RejectRequests);
    host.initialize(&[]).await;
    let peer = host.peer.clone();
    tokio::spawn(async move {
        let _ = peer
            .request("command/invoke", Some(json!({ "name": "demo.plain" })))
            .await;
    });
    within(started.notified()).await;
    host.finish().await.unwrap();
}

#[test]
fn errors_debug_print_as_their_readable_message() {
    let error = Error::ArgsSchema {
        command: "demo.greet".to_owned(),
        reason: "bad".to_owned(),
    };
    assert_eq!(format!("{error:?}"), error.to_string());
    assert!(
        error
            .to_string()
            .starts_with("the argsSchema of `demo.greet` does not compile")
    );
}

/// A bound command with `schema` (taken as not plain) and a handler that is never run.
fn bound(schema: Option<Value>) -> crate::serve::Bound {
    crate::serve::Bound {
        schema,
        plain: None,
        validator: std::sync::OnceLock::new(),
        handler: Arc::new(|_ctx, _args| Box::pin(async { Ok(Value::Null) })),
    }
}

#[test]
fn an_args_schema_compiles_on_first_use_and_only_once() {
    let command = bound(Some(json!({ "type": "object", "required": ["name"] })));
    assert!(
        command.validator.get().is_none(),
        "compiled before any call"
    );
    let first = command.validator("demo.greet").unwrap().unwrap();
    assert!(!first.is_valid(&json!({})));
    assert!(first.is_valid(&json!({ "name": "x" })));
    let first: *const jsonschema::Validator = first;
    let again: *const jsonschema::Validator = command.validator("demo.greet").unwrap().unwrap();
    assert!(std::ptr::eq(first, again), "compiled twice");
    assert!(bound(None).validator("demo.plain").unwrap().is_none());
}

#[test]
fn a_schema_that_does_not_compile_fails_its_invocations_with_a_clear_error() {
    // The manifest check refuses such a schema; built by hand, it reaches the lazy compile.
    let command = bound(Some(json!({ "type": "string", "pattern": "(" })));
    for _ in 0..2 {
        let error = command.validator("demo.broken").err().unwrap();
        assert_eq!(error.code, c2_protocol::codes::COMMAND_FAILED);
        assert!(
            error
                .message
                .starts_with("the argsSchema of `demo.broken` does not compile"),
            "{}",
            error.message
        );
    }
}

/// A bound command as a plugin start builds it: the plain schema compiled when there is one.
fn started(schema: Value) -> crate::serve::Bound {
    crate::serve::Bound {
        plain: c2_manifest::plain_schema::PlainSchema::detect(&schema),
        schema: Some(schema),
        validator: std::sync::OnceLock::new(),
        handler: Arc::new(|_ctx, _args| Box::pin(async { Ok(Value::Null) })),
    }
}

#[test]
fn a_plain_schema_checks_args_without_compiling_jsonschema() {
    let command = started(json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "additionalProperties": false
    }));
    assert!(command.plain.is_some(), "the bench's schema is plain");
    command
        .check("sdk.echo", &json!({ "text": "hi" }), 16)
        .unwrap();
    assert!(
        command.validator.get().is_none(),
        "valid args compiled the jsonschema validator"
    );
    // A rejection is reported by jsonschema, exactly as for a schema that is not plain.
    let error = command
        .check("sdk.echo", &json!({ "text": 5, "more": 1 }), 16)
        .unwrap_err();
    assert_eq!(error.code, -32602);
    assert!(
        error.message.starts_with("invalid args at "),
        "{}",
        error.message
    );
    let data = val(error.data);
    let violations = data["violations"].as_array().unwrap();
    let paths: Vec<(&str, &str)> = violations
        .iter()
        .map(|v| {
            (
                v["instancePath"].as_str().unwrap(),
                v["schemaPath"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        paths.contains(&("/text", "/properties/text/type")),
        "{paths:?}"
    );
    assert!(paths.contains(&("", "/additionalProperties")), "{paths:?}");
    assert!(command.validator.get().is_some());
    let limited = command
        .check("sdk.echo", &json!({ "text": 5, "more": 1 }), 1)
        .unwrap_err();
    assert_eq!(val(limited.data)["violations"].as_array().unwrap().len(), 1);
}

#[test]
fn a_schema_that_is_not_plain_still_gets_the_jsonschema_validator() {
    let command = started(json!({ "type": "string", "pattern": "^a" }));
    assert!(command.plain.is_none());
    command.check("demo.p", &json!("abc"), 16).unwrap();
    assert!(command.validator.get().is_some());
    let error = command.check("demo.p", &json!("xyz"), 16).unwrap_err();
    assert_eq!(error.code, -32602);
    assert_eq!(val(error.data)["violations"][0]["schemaPath"], "/pattern");
}

#[test]
fn a_plain_rejection_jsonschema_cannot_report_falls_back_to_the_plain_violation() {
    // Built by hand: a plain schema beside a jsonschema one that does not compile.
    let mut command = started(json!({ "properties": { "n": { "type": "integer" } } }));
    command.schema = Some(json!({ "pattern": "(" }));
    let error = command
        .check("demo.n", &json!({ "n": 2.5 }), 16)
        .unwrap_err();
    assert_eq!(error.code, -32602);
    assert_eq!(
        error.message,
        "invalid args at `/n`: 2.5 is not of type \"integer\""
    );
    let data = val(error.data);
    assert_eq!(data["violations"][0]["instancePath"], "/n");
    assert_eq!(data["violations"][0]["schemaPath"], "/properties/n/type");
}

mod plain_path {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::started;

    /// Plain schemas over keys `a` and `b`, with the keywords argument schemas use.
    fn schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string"})),
            Just(json!({"type": "integer", "minimum": 0})),
            Just(json!({"type": ["number", "null"], "exclusiveMaximum": 2.5})),
            Just(json!({"type": "string", "minLength": 1, "maxLength": 2})),
            Just(json!({"enum": ["x", 1, null]})),
            Just(json!({"const": 3.0})),
            Just(json!({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})),
            Just(json!(false)),
            Just(json!({})),
        ];
        leaf.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                (
                    prop::collection::btree_map("[ab]", inner.clone(), 0..3),
                    prop::sample::subsequence(vec!["a", "b"], 0..=2),
                    prop_oneof![
                        Just(None),
                        Just(Some(json!(false))),
                        inner.clone().prop_map(Some)
                    ],
                )
                    .prop_map(|(properties, required, additional)| {
                        let mut schema = json!({
                            "type": "object",
                            "properties": properties,
                            "required": required,
                        });
                        if let Some(additional) = additional {
                            schema["additionalProperties"] = additional;
                        }
                        schema
                    }),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|s| json!({"anyOf": s})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|s| json!({"oneOf": s})),
                inner.prop_map(|s| json!({"not": s})),
            ]
        })
    }

    fn args() -> impl Strategy<Value = Value> {
        let scalar = prop_oneof![
            Just(Value::Null),
            Just(json!(true)),
            Just(json!(0)),
            Just(json!(-1)),
            Just(json!(2)),
            Just(json!(2.5)),
            Just(json!(3.0)),
            Just(json!("")),
            Just(json!("x")),
            Just(json!("é日")),
            Just(json!("abc")),
        ];
        scalar.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[abc]", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// The SDK's check of a plain schema gives jsonschema's verdict, and a rejection is a
        /// `-32602` naming a path.
        #[test]
        fn the_plain_path_gives_jsonschemas_verdict(schema in schema(), args in args()) {
            let command = started(schema.clone());
            prop_assert!(command.plain.is_some(), "not plain: {}", schema);
            let expected = jsonschema::validator_for(&schema).unwrap().is_valid(&args);
            match command.check("demo.any", &args, 16) {
                Ok(()) => prop_assert!(expected, "accepted {} against {}", args, schema),
                Err(error) => {
                    prop_assert!(!expected, "refused {} against {}", args, schema);
                    prop_assert_eq!(error.code, -32602);
                    prop_assert!(error.message.starts_with("invalid args at "), "{}", error.message);
                }
            }
        }
    }
}

/// Runs `plugin` fed `input` with its stdin closed right after, and collects every line it
/// writes until it closes its output; returns them with `run_with`'s result.
async fn one_shot(plugin: Plugin, input: String) -> (Vec<Value>, Result<(), Error>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (mut host_out, plugin_in) = tokio::io::duplex(64 * 1024);
    let (plugin_out, mut host_in) = tokio::io::duplex(64 * 1024);
    let run = tokio::spawn(plugin.run_with(plugin_in, plugin_out));
    host_out.write_all(input.as_bytes()).await.unwrap();
    host_out.shutdown().await.unwrap();
    let mut text = String::new();
    within(host_in.read_to_string(&mut text)).await.unwrap();
    let result = within(run).await.unwrap();
    let lines = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (lines, result)
}

fn init_then_invoke(name: &str) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "1.0.0",
        "host": { "name": "test-host", "version": "0.0.0", "commands": ["git.status"] },
        "dataDir": "/data/demo"
    }});
    let invoke = json!({ "jsonrpc": "2.0", "id": 2, "method": "command/invoke",
        "params": { "name": name, "args": {} } });
    format!("{init}\n{invoke}\n")
}

#[tokio::test]
async fn requests_sent_just_before_stdin_closes_are_answered_with_their_log_lines() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let (layer, handle) = LogLayer::new(tracing::Level::INFO);
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count)
        .command("demo.plain", |_ctx, _args: Value| async move {
            tracing::info!("working");
            tokio::time::sleep(Duration::from_millis(30)).await;
            tracing::info!("done");
            Ok::<_, CommandError>(json!("answered"))
        })
        .log_handle(handle);
    let (lines, result) = one_shot(plugin, init_then_invoke("demo.plain")).await;
    result.unwrap();
    let answer = |id: u64| lines.iter().find(|m| m["id"] == id).cloned();
    assert_eq!(answer(1).unwrap()["result"]["name"], "demo", "{lines:?}");
    assert_eq!(answer(2).unwrap()["result"], "answered", "{lines:?}");
    // Log lines travel their own queue, so they may follow the answer; none is lost.
    let logged: Vec<&Value> = lines
        .iter()
        .filter(|m| m["method"] == "log")
        .map(|m| &m["params"]["message"])
        .collect();
    assert_eq!(logged, [&json!("working"), &json!("done")], "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
}

#[tokio::test]
async fn a_call_to_the_host_after_stdin_closed_fails_at_once_without_waiting_for_the_grace() {
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count)
        .command("demo.plain", |ctx: Context, _args: Value| async move {
            // Give the end of stdin time to arrive first, then ask the host.
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok::<_, CommandError>(ctx.call("git.status", json!({ "cwd": "." })).await?)
        })
        .with_options(RunOptions {
            shutdown_grace: WAIT,
            ..RunOptions::default()
        });
    let started = std::time::Instant::now();
    let (lines, result) = one_shot(plugin, init_then_invoke("demo.plain")).await;
    result.unwrap();
    let answer = lines.iter().find(|m| m["id"] == 2).unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("closed its output"),
        "{answer}"
    );
    assert!(
        lines.iter().all(|m| m["method"] != "command/call"),
        "a call nobody can answer was sent: {lines:?}"
    );
    // Far under the grace (10 s) it would have waited out.
    assert!(started.elapsed() < WAIT / 2, "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_handler_slower_than_the_grace_is_abandoned_and_the_rest_still_gets_out() {
    let grace = Duration::from_millis(100);
    let flush = Duration::from_millis(100);
    let plugin = Plugin::from_manifest_text(MANIFEST)
        .unwrap()
        .command("demo.greet", greet)
        .command("demo.count", count)
        .command("demo.plain", |_ctx, _args: Value| async move {
            std::future::pending::<()>().await;
            Ok::<_, CommandError>(Value::Null)
        })
        .with_options(RunOptions {
            shutdown_grace: grace,
            flush_timeout: flush,
            ..RunOptions::default()
        });
    let started = std::time::Instant::now();
    let (lines, result) = one_shot(plugin, init_then_invoke("demo.plain")).await;
    result.unwrap();
    let took = started.elapsed();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["id"], 1);
    assert!(
        took >= grace,
        "the handler was not given its grace: {took:?}"
    );
    // Generous: it bounds a hang under load, it does not time the exit.
    assert!(took < grace + flush + Duration::from_secs(3), "{took:?}");
}
