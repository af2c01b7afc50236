//! The crate's one error type, and the typed failures a handler raises through it.

use std::sync::Arc;

/// Everything that can go wrong in the kernel: dispatch, registration, lifecycle.
///
/// Dispatch errors carry the JSON-RPC code from decisions.md through [`Error::code`], so the host
/// can put them on the wire without a second mapping table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No command of that name is visible in the realm.
    #[error("unknown command `{name}`: list the realm's commands to see what is registered")]
    UnknownCommand {
        /// The requested command name.
        name: String,
    },
    /// The command exists but its owner did not publish it for extensions.
    #[error(
        "command `{name}` is not extension-public: only commands their owner published can be called from a plugin"
    )]
    NotExtensionPublic {
        /// The requested command name.
        name: String,
    },
    /// The project realm blocks falling back to the global command of this plugin.
    #[error(
        "command `{name}` is blocked in project `{project}`: enable its plugin for this project to reach it"
    )]
    FallbackBlocked {
        /// The requested command name.
        name: String,
        /// The project realm that blocks the fallback.
        project: String,
    },
    /// The handler ran and reported a failure (or panicked).
    #[error("{name}: {message}")]
    CommandFailed {
        /// The command that failed.
        name: String,
        /// What the handler said.
        message: String,
        /// The machine-readable kind, when the handler reported an [`Error::Failure`].
        kind: Option<String>,
        /// The remote JSON-RPC error the handler's [`Error::Failure`] carried, if any.
        remote: Option<RemoteError>,
        /// The typed failure the handler's [`Error::Failure`] carried, if any (see
        /// [`Error::downcast_ref`]).
        typed: Option<FailureSource>,
    },
    /// A handler failure with a machine-readable kind (e.g. `handshake_timeout`). A typed
    /// failure ([`Error::typed`]) travels as its source, which the caller gets back with
    /// [`Error::downcast_ref`]; a free-form one ([`Error::failure`]) has only its kind string.
    /// Dispatch keeps kind and source in [`Error::CommandFailed`].
    #[error("{message}")]
    Failure {
        /// A stable snake_case kind.
        kind: String,
        /// What happened, for a person.
        message: String,
        /// The JSON-RPC error a remote handler (a plugin process) answered with, kept as it
        /// sent it.
        remote: Option<RemoteError>,
        /// The typed failure this one was raised from, if any.
        typed: Option<FailureSource>,
    },
    /// A module, handler or cleanup reported a failure in its own words.
    #[error("{0}")]
    Module(String),
    /// A panic was caught and contained.
    #[error("{what} panicked: {message}")]
    Panicked {
        /// Which piece of module code panicked (apply, cleanup, listener, handler).
        what: String,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// A second owner tried to register a command name already taken in the realm.
    #[error(
        "command `{name}` is already registered in realm {realm} by `{owner}`: pick another name or disable that module"
    )]
    DuplicateCommand {
        /// The contested name.
        name: String,
        /// The realm, rendered.
        realm: String,
        /// The module that owns the existing registration.
        owner: String,
    },
    /// A second scope tried to provide a service that already has a provider.
    #[error(
        "service `{name}` is already provided by `{owner}`: a service has exactly one provider, disable one of them"
    )]
    DuplicateService {
        /// The contested service name.
        name: String,
        /// The module that provides it now.
        owner: String,
    },
    /// Work started for a scope generation that has since been disposed or reloaded.
    #[error(
        "scope of `{module}` (generation {generation}) is no longer live: it was reloaded or unloaded, start again from the current one"
    )]
    StaleScope {
        /// The module that owned the scope.
        module: String,
        /// The generation the caller held.
        generation: u64,
    },
    /// An essential module cannot be disabled or removed.
    #[error(
        "module `{name}` is essential and cannot be disabled or removed: use reset to recover it"
    )]
    Essential {
        /// The essential module.
        name: String,
    },
    /// A module name that no factory provides.
    #[error("no module named `{name}` is registered: check the catalog for the available names")]
    UnknownModule {
        /// The requested module name.
        name: String,
    },
    /// A project realm was unloaded ([`crate::Kernel::unload_project`]) while a call was
    /// waiting for it; the call is not answered from another realm instead.
    #[error(
        "project realm `{project}` was unloaded while this call waited for it: call again to recreate it"
    )]
    ProjectUnloaded {
        /// The project realm, rendered.
        project: String,
    },
    /// The kernel has been shut down.
    #[error("the plugin kernel is shut down: start a new host")]
    ShutDown,
}

impl Error {
    /// A module or handler failure with a free-form message.
    pub fn module(message: impl Into<String>) -> Self {
        Error::Module(message.into())
    }

    /// A handler failure with a stable snake_case kind and no typed source: an embedder
    /// module's own failure. A caller with a typed error raises it with [`Error::typed`].
    pub fn failure(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Failure {
            kind: kind.into(),
            message: message.into(),
            remote: None,
            typed: None,
        }
    }

    /// A handler failure that relays the JSON-RPC error a remote handler answered with.
    pub fn remote_failure(
        kind: impl Into<String>,
        message: impl Into<String>,
        remote: RemoteError,
    ) -> Self {
        Error::Failure {
            kind: kind.into(),
            message: message.into(),
            remote: Some(remote),
            typed: None,
        }
    }

    /// A handler failure raised from a typed error: its kind is [`TypedFailure::kind`], its
    /// message the error's, and the error itself travels along, through dispatch, for the
    /// caller to get back with [`Error::downcast_ref`].
    pub fn typed<E: TypedFailure>(error: E) -> Self {
        Error::Failure {
            kind: error.kind().to_owned(),
            message: error.to_string(),
            remote: None,
            typed: Some(FailureSource(Arc::new(Box::new(error)))),
        }
    }

    /// [`Error::typed`] for a failure that also relays the JSON-RPC error a remote handler
    /// answered with.
    pub fn typed_remote<E: TypedFailure>(error: E, remote: RemoteError) -> Self {
        match Self::typed(error) {
            Error::Failure {
                kind,
                message,
                typed,
                ..
            } => Error::Failure {
                kind,
                message,
                remote: Some(remote),
                typed,
            },
            other => other,
        }
    }

    /// This handler error as the [`Error::CommandFailed`] of a call to `name`: its message,
    /// kind, remote error and typed source kept.
    pub(crate) fn failed_in(self, name: &str) -> Self {
        Error::CommandFailed {
            name: name.to_owned(),
            message: self.to_string(),
            kind: self.kind().map(str::to_owned),
            remote: self.remote().cloned(),
            typed: self.typed_source().cloned(),
        }
    }

    /// The typed failure a handler failure was raised from, if it was raised from one.
    pub fn typed_source(&self) -> Option<&FailureSource> {
        match self {
            Error::Failure { typed, .. } | Error::CommandFailed { typed, .. } => typed.as_ref(),
            _ => None,
        }
    }

    /// The typed failure a handler failure was raised from, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.typed_source().and_then(FailureSource::downcast_ref)
    }

    /// The remote JSON-RPC error a handler failure carries, if it relayed one.
    pub fn remote(&self) -> Option<&RemoteError> {
        match self {
            Error::Failure { remote, .. } | Error::CommandFailed { remote, .. } => remote.as_ref(),
            _ => None,
        }
    }

    /// The machine-readable kind of a handler failure, if it reported one.
    pub fn kind(&self) -> Option<&str> {
        match self {
            Error::Failure { kind, .. } => Some(kind),
            Error::CommandFailed { kind, .. } => kind.as_deref(),
            _ => None,
        }
    }

    /// The JSON-RPC error code decisions.md assigns to this error.
    pub fn code(&self) -> i64 {
        match self {
            Error::UnknownCommand { .. } => -32001,
            Error::NotExtensionPublic { .. } | Error::FallbackBlocked { .. } => -32002,
            _ => -32000,
        }
    }
}

/// A typed error a handler raises through the kernel ([`Error::typed`]): its stable snake_case
/// kind travels with it, so a caller that does not know the type still has the kind.
pub trait TypedFailure: std::error::Error + Send + Sync + 'static {
    /// The stable snake_case kind (e.g. `handshake_timeout`).
    fn kind(&self) -> &str;
}

/// The typed failure an [`Error::Failure`] or [`Error::CommandFailed`] carries, shared between
/// the clones of the error. Two sources compare equal: the failure's kind, which is compared,
/// says what went wrong.
// One thin pointer, so carrying a source does not make every kernel result larger.
#[derive(Clone)]
pub struct FailureSource(Arc<Box<dyn std::error::Error + Send + Sync>>);

impl FailureSource {
    /// The typed failure as an error.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &**self.0
    }

    /// The typed failure, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl std::fmt::Debug for FailureSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self.0, f)
    }
}

impl PartialEq for FailureSource {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for FailureSource {}

/// The JSON-RPC error object's `code` and `data` a remote handler answered with (its message
/// is the failure's message).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The error's `data`, when there was one.
    pub data: Option<serde_json::Value>,
}

impl RemoteError {
    /// A remote error with this code and data.
    pub fn new(code: i64, data: Option<serde_json::Value>) -> Self {
        Self { code, data }
    }
}

#[cfg(test)]
mod tests {
    use super::{Error, RemoteError, TypedFailure};

    #[derive(Debug, thiserror::Error)]
    #[error("the quota is used up")]
    struct Quota;

    impl TypedFailure for Quota {
        fn kind(&self) -> &str {
            "quota_used_up"
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("other")]
    struct Other;

    #[test]
    fn a_typed_failure_keeps_its_kind_message_and_source_through_clones() {
        let error = Error::typed(Quota);
        assert_eq!(error.kind(), Some("quota_used_up"));
        assert_eq!(error.to_string(), "the quota is used up");
        assert!(error.remote().is_none());
        let copy = error.clone();
        assert!(copy.downcast_ref::<Quota>().is_some());
        assert!(copy.downcast_ref::<Other>().is_none());
        assert_eq!(
            copy.typed_source().map(|s| s.error().to_string()),
            Some("the quota is used up".to_owned())
        );
        assert!(format!("{copy:?}").contains("Quota"), "{copy:?}");
    }

    #[test]
    fn a_typed_remote_failure_carries_both_the_remote_error_and_the_source() {
        let remote = RemoteError::new(-32050, Some(serde_json::json!({"retryAfter": 30})));
        let error = Error::typed_remote(Quota, remote.clone());
        assert_eq!(error.remote(), Some(&remote));
        assert_eq!(error.kind(), Some("quota_used_up"));
        assert!(error.downcast_ref::<Quota>().is_some());
    }

    #[test]
    fn a_free_form_failure_has_a_kind_and_no_typed_source() {
        let error = Error::failure("my_module_kind", "no");
        assert_eq!(error.kind(), Some("my_module_kind"));
        assert!(error.typed_source().is_none());
        assert!(error.downcast_ref::<Quota>().is_none());
        assert!(Error::module("x").typed_source().is_none());
    }

    #[test]
    fn equality_compares_kinds_and_messages_not_the_source_objects() {
        assert_eq!(Error::typed(Quota), Error::typed(Quota));
        // A typed and a free-form failure of the same kind and message differ only in whether
        // a source travels along.
        assert_ne!(
            Error::typed(Quota),
            Error::failure("quota_used_up", "the quota is used up")
        );
        assert_ne!(
            Error::typed(Quota),
            Error::failure("other", "the quota is used up")
        );
    }

    /// A module whose one command fails with [`Quota`].
    struct Failing;

    impl crate::Module for Failing {
        fn name(&self) -> &str {
            "failing"
        }
        fn meta(&self) -> crate::ModuleMeta {
            crate::ModuleMeta::new(crate::Role::BuiltIn, "c2", "test")
        }
        fn apply<'a>(
            &'a self,
            ctx: &'a mut crate::ScopeContext,
        ) -> crate::BoxFuture<'a, Result<(), Error>> {
            Box::pin(async move {
                let handler = crate::command_handler(|_, _| async { Err(Error::typed(Quota)) });
                ctx.register_command(
                    "quota.check",
                    crate::CommandSpec::new("quota.check"),
                    handler,
                )
            })
        }
    }

    #[tokio::test]
    async fn dispatch_keeps_the_typed_source_of_a_handler_failure() {
        let kernel = crate::Kernel::default();
        kernel.register_factory(std::sync::Arc::new(Failing), 1);
        kernel.reconcile().await;
        let error = kernel
            .call(
                &crate::Realm::Global,
                "quota.check",
                serde_json::Value::Null,
            )
            .await
            .unwrap_err();
        assert!(matches!(error, Error::CommandFailed { .. }), "{error:?}");
        assert_eq!(error.to_string(), "quota.check: the quota is used up");
        assert_eq!(error.kind(), Some("quota_used_up"));
        assert!(error.downcast_ref::<Quota>().is_some());
    }
}
