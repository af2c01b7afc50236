//! Modules an embedder registers next to the host's own: what may be added or replaced, and
//! how a module that cannot apply is refused and rolled back.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use c2_kernel::{
    BoxFuture, Error as KernelError, Module, ModuleMeta, ModuleState, Realm, ScopeContext,
};
use c2_lock::lock;
use serde_json::Value;

use crate::error::{ErrorKind, HostError};

/// Who owns a module name an embedder may not replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtectedOwner {
    /// A module the host registers itself (e.g. `git`).
    Host,
    /// An essential module (e.g. `plugins`): never replaced, disabled or removed.
    Essential,
    /// The `bundle:` namespace of installed bundles.
    Bundle,
}

impl std::fmt::Display for ProtectedOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProtectedOwner::Host => "a built-in module of the host",
            ProtectedOwner::Essential => "an essential module",
            ProtectedOwner::Bundle => "reserved for installed bundles",
        })
    }
}

/// Why [`crate::PluginHost::register_module`] refused a module. Nothing changed when it
/// returns one of these: a module that failed to apply is unregistered again (or its previous
/// revision restored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModuleError {
    /// This name is already registered with this revision.
    #[error(
        "module `{name}` is already registered at revision {revision}: register a new revision to replace it"
    )]
    AlreadyRegistered {
        /// The module name.
        name: String,
        /// The revision already registered.
        revision: u64,
    },
    /// The name belongs to the host, an essential module or the bundle namespace.
    #[error("module `{name}` cannot be registered: the name is {owner}; pick another name")]
    Protected {
        /// The module name.
        name: String,
        /// Who owns it.
        owner: ProtectedOwner,
    },
    /// Applying the module registered a command another module already owns in that realm.
    #[error(
        "module `{module}` registers command `{command}`, already registered in realm {realm} by `{owner}`: rename the command or leave that module out"
    )]
    DuplicateCommand {
        /// The refused module.
        module: String,
        /// The contested command.
        command: String,
        /// The realm, rendered.
        realm: String,
        /// The module owning the command.
        owner: String,
    },
    /// Applying the module failed (an error or a panic in its `apply`).
    #[error("module `{module}` failed to apply in realm {realm}: {reason}")]
    ApplyFailed {
        /// The refused module.
        module: String,
        /// The realm, rendered.
        realm: String,
        /// What the module or the kernel said.
        reason: String,
    },
}

impl ModuleError {
    /// The kind, as [`HostError::kind`] reports it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ModuleError::AlreadyRegistered { .. } => ErrorKind::AlreadyRegistered,
            ModuleError::Protected { .. } => ErrorKind::ProtectedModule,
            ModuleError::DuplicateCommand { .. } => ErrorKind::DuplicateCommand,
            ModuleError::ApplyFailed { .. } => ErrorKind::ActivationFailed,
        }
    }
}

impl From<ModuleError> for HostError {
    fn from(error: ModuleError) -> Self {
        HostError::command(error.kind(), error.to_string())
    }
}

/// A registered module with its revision.
pub(crate) type Registered = (Arc<dyn Module>, u64);

/// The embedder's modules by name, with their revision: the only names it may replace.
#[derive(Default)]
pub(crate) struct Embedded {
    modules: Mutex<BTreeMap<String, Registered>>,
}

impl Embedded {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Registered>> {
        lock(&self.modules)
    }

    /// The module registered under `name` now, if the embedder registered it.
    pub(crate) fn get(&self, name: &str) -> Option<Registered> {
        self.lock().get(name).cloned()
    }

    pub(crate) fn set(&self, name: &str, entry: Option<Registered>) {
        let mut modules = self.lock();
        match entry {
            Some(entry) => modules.insert(name.to_owned(), entry),
            None => modules.remove(name),
        };
    }
}

/// Wraps an embedder's module to keep the first kernel error its `apply` returned, so a
/// refusal can say which command collided instead of only the failure text.
pub(crate) struct Recording {
    inner: Arc<dyn Module>,
    first_error: Mutex<Option<(Realm, KernelError)>>,
}

impl Recording {
    pub(crate) fn new(inner: Arc<dyn Module>) -> Self {
        Recording {
            inner,
            first_error: Mutex::new(None),
        }
    }

    pub(crate) fn take_error(&self) -> Option<(Realm, KernelError)> {
        lock(&self.first_error).take()
    }
}

impl Module for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn meta(&self) -> ModuleMeta {
        self.inner.meta()
    }
    fn inject(&self) -> Vec<String> {
        self.inner.inject()
    }
    fn optional_inject(&self) -> Vec<String> {
        self.inner.optional_inject()
    }
    fn config_schema(&self) -> Option<Value> {
        self.inner.config_schema()
    }
    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), KernelError>> {
        Box::pin(async move {
            let realm = ctx.realm().clone();
            let outcome = self.inner.apply(ctx).await;
            if let Err(error) = &outcome {
                let mut first = lock(&self.first_error);
                first.get_or_insert_with(|| (realm, error.clone()));
            }
            outcome
        })
    }
}

/// The refusal for a module whose apply failed in one of `realms`, if it did.
pub(crate) fn apply_failure(
    kernel: &c2_kernel::Kernel,
    module: &Recording,
    realms: &[Realm],
) -> Option<ModuleError> {
    let name = module.name();
    let (failed, reason) = realms.iter().find_map(|realm| {
        let entry = kernel.catalog(realm).into_iter().find(|e| e.name == name)?;
        match entry.state {
            ModuleState::Failed { reason } => Some((realm.clone(), reason)),
            _ => None,
        }
    })?;
    let error = match module.take_error() {
        Some((
            at,
            KernelError::DuplicateCommand {
                name: command,
                realm,
                owner,
            },
        )) if at == failed => ModuleError::DuplicateCommand {
            module: name.to_owned(),
            command,
            realm,
            owner,
        },
        _ => ModuleError::ApplyFailed {
            module: name.to_owned(),
            realm: failed.to_string(),
            reason,
        },
    };
    Some(error)
}
