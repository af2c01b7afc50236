//! [`CheckOptions`]: every bound of a check, with the host's defaults.

use std::path::PathBuf;
use std::time::Duration;

use c2_bundle_collector::Limits;
use c2_protocol::{INITIALIZE_TIMEOUT, PeerOptions};
use c2_supervisor::SupervisorOptions;

/// `with_<field>` setters, each documented by the field it sets.
macro_rules! setters {
    ($owner:literal; $($setter:ident => $field:ident: $ty:ty,)+) => {
        $(
            #[doc = concat!("Sets [`", $owner, "::", stringify!($field), "`].")]
            #[must_use]
            pub fn $setter(mut self, value: $ty) -> Self {
                self.$field = value;
                self
            }
        )+
    };
}

/// Every bound of a check; the defaults are the host's (decisions.md) where the host has one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckOptions {
    /// How long the runtime may take to answer `initialize`, counted from spawn (10 s).
    pub handshake_timeout: Duration,
    /// How long one `command/invoke` may take. The protocol sets no invoke timeout; a check has
    /// to end, so it waits this long (10 s) and reports a missing answer as a failure.
    pub invoke_timeout: Duration,
    /// How long the process may take to exit once its stdin is closed (1 s, the host's stop
    /// grace).
    pub exit_grace: Duration,
    /// How long the check waits, once the process has ended, for its last stderr lines to be
    /// read before quoting them (50 ms).
    pub stderr_settle: Duration,
    /// How many non-protocol stdout lines and `log` messages are quoted in the report (3).
    pub max_excerpts: usize,
    /// How many characters of a command's result are quoted in the report (240).
    pub max_result_chars: usize,
    /// Sent as `initialize.host.name`.
    pub host_name: String,
    /// Sent as `initialize.host.version`.
    pub host_version: String,
    /// The `dataDir` handed to the plugin; `None` makes a fresh directory under the system
    /// temporary directory and removes it afterwards.
    pub data_dir: Option<PathBuf>,
    /// Bounds of the connection.
    pub peer: PeerOptions,
    /// The host's bound on a `log` message (64 KiB); a longer one fails the log check.
    pub log_message_max_bytes: usize,
    /// The host's bound on a result read into a value (32 MiB); a result over it fails.
    pub max_value_tree_bytes: usize,
    /// Stop grace and stderr handling of the process.
    pub supervisor: SupervisorOptions,
    /// Bundle collection limits.
    pub limits: Limits,
}

impl CheckOptions {
    /// Sets [`CheckOptions::host_name`].
    #[must_use]
    pub fn with_host_name(mut self, name: impl Into<String>) -> Self {
        self.host_name = name.into();
        self
    }

    /// Sets [`CheckOptions::host_version`].
    #[must_use]
    pub fn with_host_version(mut self, version: impl Into<String>) -> Self {
        self.host_version = version.into();
        self
    }

    /// Sets [`CheckOptions::data_dir`].
    #[must_use]
    pub fn with_data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    setters! {
        "CheckOptions";
        with_handshake_timeout => handshake_timeout: Duration,
        with_invoke_timeout => invoke_timeout: Duration,
        with_exit_grace => exit_grace: Duration,
        with_stderr_settle => stderr_settle: Duration,
        with_max_excerpts => max_excerpts: usize,
        with_max_result_chars => max_result_chars: usize,
        with_peer => peer: PeerOptions,
        with_log_message_max_bytes => log_message_max_bytes: usize,
        with_max_value_tree_bytes => max_value_tree_bytes: usize,
        with_supervisor => supervisor: SupervisorOptions,
        with_limits => limits: Limits,
    }
}

impl Default for CheckOptions {
    /// The bounds the host applies to the same runtime by default.
    fn default() -> Self {
        let supervisor = SupervisorOptions::default();
        Self {
            handshake_timeout: INITIALIZE_TIMEOUT,
            invoke_timeout: Duration::from_secs(10),
            exit_grace: supervisor.stop_grace,
            stderr_settle: Duration::from_millis(50),
            max_excerpts: 3,
            max_result_chars: 240,
            host_name: "c2-host".to_owned(),
            host_version: env!("CARGO_PKG_VERSION").to_owned(),
            data_dir: None,
            peer: PeerOptions::default(),
            log_message_max_bytes: 64 * 1024,
            max_value_tree_bytes: 32 * 1024 * 1024,
            supervisor,
            limits: Limits::default(),
        }
    }
}

impl CheckOptions {
    /// The defaults (see each field).
    pub fn new() -> Self {
        Self::default()
    }
}
