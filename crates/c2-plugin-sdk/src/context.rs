//! What a handler may do and know: call the host, emit events, read the initialize params.

use std::path::Path;
use std::sync::Arc;

use c2_protocol::{CallError, CommandCallParams, EventEmitParams, InitializeParams, Peer, method};
use serde_json::Value;

/// A handler's view of the connection and of the `initialize` params. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Context {
    peer: Peer,
    init: Arc<InitializeParams>,
}

impl Context {
    pub(crate) fn new(peer: Peer, init: Arc<InitializeParams>) -> Self {
        Context { peer, init }
    }

    /// Calls an extension-public host command (`command/call`) and waits for its result.
    ///
    /// The host refuses a command it does not publish in this realm; check
    /// [`Context::has_host_command`] first to degrade gracefully. Once stdin has closed, nothing
    /// can answer: the call fails at once with [`CallError::Closed`].
    pub async fn call(&self, name: &str, args: Value) -> Result<Value, CallError> {
        let params = CommandCallParams {
            name: name.to_owned(),
            args,
        };
        self.peer
            .request(method::COMMAND_CALL, Some(to_value(&params)))
            .await
    }

    /// Emits an event onto the host's JSON bus (`event/emit`). The bus is host-wide: put no
    /// project secret in `payload`. Fails rather than waits when the outbound queue is full.
    pub async fn emit(&self, name: &str, payload: Value) -> Result<(), CallError> {
        let params = EventEmitParams {
            name: name.to_owned(),
            payload,
        };
        self.peer
            .notify(method::EVENT_EMIT, Some(to_value(&params)))
            .await
    }

    /// The extension-public host commands visible from this realm at initialization.
    pub fn host_commands(&self) -> &[String] {
        &self.init.host.commands
    }

    /// Whether the host offered `name` at initialization.
    pub fn has_host_command(&self, name: &str) -> bool {
        self.host_commands().iter().any(|c| c == name)
    }

    /// This plugin's entry from the host's plugin config, verbatim (`null` when there is none).
    pub fn config(&self) -> &Value {
        &self.init.config
    }

    /// The directory this instance may write to; the host created it.
    pub fn data_dir(&self) -> &Path {
        Path::new(&self.init.data_dir)
    }

    /// The normalized project path of a project-scoped instance; `None` for the user instance.
    pub fn project_path(&self) -> Option<&Path> {
        self.init.project_path.as_deref().map(Path::new)
    }

    /// The whole `initialize` params, for what the accessors above do not cover.
    pub fn initialize_params(&self) -> &InitializeParams {
        &self.init
    }
}

fn to_value<T: serde::Serialize>(params: &T) -> Value {
    // The protocol's param types are plain structs of strings and JSON values: serializing them
    // cannot fail.
    serde_json::to_value(params).unwrap_or(Value::Null)
}
