//! The builder: a manifest, the handlers bound to its commands and events, and how to run them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use c2_manifest::{Manifest, ManifestOptions, render_diagnostics, validate_manifest};
use c2_protocol::{ErrorObject, codes};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::context::Context;
use crate::error::{CommandError, Error};
use crate::log::{LogHandle, LogLayer};
use crate::options::RunOptions;

pub(crate) type InvokeFuture = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>;
pub(crate) type CommandFn = Arc<dyn Fn(Context, Value) -> InvokeFuture + Send + Sync>;
pub(crate) type EventFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
pub(crate) type EventFn = Arc<dyn Fn(Context, Value) -> EventFuture + Send + Sync>;

/// The file a bundle declares itself in; the host starts the runtime in the bundle directory.
pub const MANIFEST_FILE: &str = "plugin.json";

/// A plugin runtime: the bundle's manifest and one handler per declared command.
///
/// ```no_run
/// use c2_plugin_sdk::{Context, CommandError, Error, Plugin};
///
/// #[derive(serde::Deserialize)]
/// struct GreetArgs { name: Option<String> }
///
/// fn main() -> Result<(), Error> {
///     Plugin::from_manifest()?
///         .command("hello.greet", |_ctx: Context, args: GreetArgs| async move {
///             let name = args.name.unwrap_or_else(|| "world".to_owned());
///             Ok::<_, CommandError>(format!("Hello, {name}!"))
///         })
///         .run()
/// }
/// ```
pub struct Plugin {
    pub(crate) manifest: Manifest,
    pub(crate) commands: BTreeMap<String, CommandFn>,
    pub(crate) events: BTreeMap<String, EventFn>,
    duplicated: BTreeSet<String>,
    pub(crate) options: RunOptions,
    pub(crate) log: Option<LogHandle>,
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.manifest.name)
            .field("commands", &self.commands.keys().collect::<Vec<_>>())
            .field("events", &self.events.keys().collect::<Vec<_>>())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// Reads and validates `plugin.json` from the current directory (the bundle directory).
    #[expect(
        clippy::disallowed_methods,
        reason = "a plugin reads its own plugin.json; the host's crates do not run inside a plugin"
    )]
    pub fn from_manifest() -> Result<Plugin, Error> {
        let path = Path::new(MANIFEST_FILE);
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadManifest {
            path: path.to_owned(),
            source,
        })?;
        Plugin::from_manifest_text(&text)
    }

    /// Validates a manifest given as text (each `argsSchema` included: c2-manifest accepts a
    /// plain one, see [`c2_manifest::plain_schema`], without jsonschema, checks any other
    /// against its draft's meta-schema, and compiles any that uses more than plain keywords).
    ///
    /// A plain `argsSchema` is compiled when the plugin starts serving (microseconds) and
    /// checks every invocation without jsonschema, whose first use in a process costs ~1.5 ms
    /// building its meta-validator; jsonschema is compiled only to report a rejection. Any other
    /// schema's validator is compiled on that command's first invocation, not here: a start
    /// does only what answering `initialize` needs, and a command never called costs nothing.
    /// A schema the manifest check accepted compiles; were it not to, that command's
    /// invocations answer [`Error::ArgsSchema`]'s message with code `-32000`.
    pub fn from_manifest_text(text: &str) -> Result<Plugin, Error> {
        let report = validate_manifest(text, &ManifestOptions::default());
        let rendered = render_diagnostics(MANIFEST_FILE, text, &report.diagnostics, false);
        let Ok(manifest) = report.into_manifest() else {
            return Err(Error::InvalidManifest { rendered });
        };
        Ok(Plugin {
            manifest,
            commands: BTreeMap::new(),
            events: BTreeMap::new(),
            duplicated: BTreeSet::new(),
            options: RunOptions::default(),
            log: None,
        })
    }

    /// The validated manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Replaces the limits.
    #[must_use]
    pub fn with_options(mut self, options: RunOptions) -> Self {
        self.options = options;
        self
    }

    /// Forwards `tracing` events through this [`LogLayer`]'s handle once the handshake is done.
    /// [`Plugin::run`] sets this up itself; use it with [`Plugin::run_with`] or to compose the
    /// layer with others.
    #[must_use]
    pub fn log_handle(mut self, handle: LogHandle) -> Self {
        self.log = Some(handle);
        self
    }

    /// Binds the handler of the declared command `id`.
    ///
    /// The host's args are validated against the command's `argsSchema` (absent or `null` args
    /// count as `{}`), then deserialized into `A`; either failure answers `-32602` naming the
    /// failing path, and the handler does not run. Handlers run concurrently.
    #[must_use]
    pub fn command<A, R, F, Fut>(mut self, id: &str, handler: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(Context, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, CommandError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: CommandFn = Arc::new(move |ctx, args| {
            let args = match serde_path_to_error::deserialize::<_, A>(args) {
                Ok(args) => args,
                Err(e) => {
                    let path = pointer(e.path());
                    let error = ErrorObject {
                        code: codes::INVALID_PARAMS,
                        message: format!("invalid args at {}: {}", describe_path(&path), e.inner()),
                        data: c2_protocol::to_raw(&serde_json::json!({
                            "violations": [{ "instancePath": path, "message": e.inner().to_string() }]
                        }))
                        .ok(),
                    };
                    return Box::pin(async move { Err(error) }) as InvokeFuture;
                }
            };
            let run = handler(ctx, args);
            Box::pin(async move {
                let result = run.await.map_err(CommandError::into_error_object)?;
                serde_json::to_value(result).map_err(|e| {
                    ErrorObject::new(
                        codes::COMMAND_FAILED,
                        format!("the command's result could not be serialized to JSON: {e}"),
                    )
                })
            })
        });
        if self.commands.insert(id.to_owned(), erased).is_some() {
            self.duplicated.insert(id.to_owned());
        }
        self
    }

    /// Subscribes to the host event `name` (e.g. `skills/changed`); its payload is passed as is.
    /// The name is listed in `initialize.events`, and only subscribed events are dispatched.
    #[must_use]
    pub fn on_event<F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        F: Fn(Context, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let erased: EventFn = Arc::new(move |ctx, payload| Box::pin(handler(ctx, payload)));
        if self.events.insert(name.to_owned(), erased).is_some() {
            self.duplicated.insert(name.to_owned());
        }
        self
    }

    /// Runs the plugin on the process's stdio until stdin closes, on a single-threaded tokio
    /// runtime. It first checks the handlers against the manifest, then reserves stdout for the
    /// protocol (a later `println!` goes to stderr) and installs a [`LogLayer`] as the global
    /// `tracing` subscriber unless one is already set. That subscriber keeps no spans (nothing
    /// it forwards reads them); to have spans recorded, install your own subscriber with the
    /// layer first and pass its handle to [`Plugin::log_handle`].
    pub fn run(self) -> Result<(), Error> {
        self.check_handlers()?;
        let protocol = crate::stdio::reserve_stdout()?;
        let mut plugin = self;
        if plugin.log.is_none() {
            let (layer, handle) = LogLayer::new(plugin.options.log_level);
            use tracing_subscriber::Layer as _;
            let subscriber = layer.with_subscriber(crate::log::EventsOnly::new());
            // An author who installed a subscriber first keeps it, and its output.
            if tracing::subscriber::set_global_default(subscriber).is_ok() {
                plugin.log = Some(handle);
            }
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let chunk = plugin.options.peer.read_chunk_bytes;
        let flush_timeout = plugin.options.flush_timeout;
        let result = runtime.block_on(async move {
            match crate::stdio::pipes(&protocol) {
                Some((reader, writer)) => {
                    drop(protocol);
                    plugin.run_with(reader, writer).await
                }
                None => {
                    let (writer, copier) = crate::stdio::blocking_writer(protocol, chunk);
                    let result = plugin.run_with(tokio::io::stdin(), writer).await;
                    // The connection is closed and its end of the copy dropped: the copier
                    // writes what it still holds, then ends. Bounded like the peer's flush.
                    let _ = tokio::time::timeout(flush_timeout, copier).await;
                    result
                }
            }
        });
        // Handlers still running after the grace period are abandoned, not awaited.
        runtime.shutdown_background();
        result
    }

    /// Runs the plugin over `reader` (from the host) and `writer` (to the host) until the
    /// reader ends, then gives in-flight handlers [`RunOptions::shutdown_grace`] to finish.
    /// Refuses to start if the handlers do not match the manifest.
    pub async fn run_with<R, W>(self, reader: R, writer: W) -> Result<(), Error>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        self.check_handlers()?;
        crate::serve::serve(self, reader, writer).await;
        Ok(())
    }

    /// Every declared command has exactly one handler and every handler a declaration.
    fn check_handlers(&self) -> Result<(), Error> {
        let declared: BTreeSet<&str> = self
            .manifest
            .codetwo
            .commands
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        let missing: Vec<String> = declared
            .iter()
            .filter(|id| !self.commands.contains_key(**id))
            .map(|id| (*id).to_owned())
            .collect();
        let undeclared: Vec<String> = self
            .commands
            .keys()
            .filter(|id| !declared.contains(id.as_str()))
            .cloned()
            .collect();
        if missing.is_empty() && undeclared.is_empty() && self.duplicated.is_empty() {
            Ok(())
        } else {
            Err(Error::Handlers {
                missing,
                undeclared,
                duplicated: self.duplicated.iter().cloned().collect(),
            })
        }
    }
}

/// A serde path as a JSON pointer, the notation the schema errors use.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        out.push('/');
        match segment {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// How a message names an instance path: the root is easier read as words.
pub(crate) fn describe_path(pointer: &str) -> String {
    if pointer.is_empty() {
        "the top level".to_owned()
    } else {
        format!("`{pointer}`")
    }
}
