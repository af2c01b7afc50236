//! Every knob of the host, with the defaults of decisions.md. An embedder changes them here;
//! there are no hidden constants.

use std::path::PathBuf;
use std::time::Duration;

use c2_bundle_collector::Limits;
use c2_kernel::KernelOptions;
use c2_manifest::ManifestOptions;
use c2_policy::WatchOptions;
use c2_protocol::PeerOptions;
use c2_supervisor::{RunOptions, SupervisorOptions};

use crate::ui::HostActionsLimits;

/// How a [`crate::PluginHost`] is built.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The plugin store: bundles, policy and plugin data directories.
    pub plugins_dir: PathBuf,
    /// Sent to plugins as `initialize.host.name`.
    pub host_name: String,
    /// Sent to plugins as `initialize.host.version`.
    pub host_version: String,
    /// The directory a user-realm `git.status` resolves a relative `cwd` against.
    pub working_dir: PathBuf,
    /// How long a spawned runtime may take to answer `initialize` (the protocol's 10 s).
    pub handshake_timeout: Duration,
    /// Crashes after activation tolerated within [`HostOptions::crash_window`] before the
    /// runtime stays failed until it is reloaded (3 in 60 s).
    pub crash_limit: usize,
    /// See [`HostOptions::crash_limit`].
    pub crash_window: Duration,
    /// An optional deadline for `command/invoke` (the protocol sets none).
    pub invoke_deadline: Option<Duration>,
    /// Bounds of every plugin connection.
    pub peer: PeerOptions,
    /// Longest `log` message from a plugin passed on, in bytes; the rest is cut with a marker,
    /// like a stderr line (64 KiB).
    pub log_message_max_bytes: usize,
    /// The most memory a plugin's result, `command/call` args or event payload may take once
    /// read into a `serde_json::Value`, as estimated from its text before it is read (32 MiB,
    /// 4x the frame limit). A dense document over it (8 MiB of `[0,0,...]` would take ~300 MiB)
    /// is refused: a result as `result_too_large`, args with `-32602`, an event dropped.
    pub max_value_tree_bytes: usize,
    /// Stop grace and stderr handling of plugin processes.
    pub supervisor: SupervisorOptions,
    /// Caps and deadline of one-shot host commands such as `git`.
    pub run: RunOptions,
    /// Bundle collection limits.
    pub limits: Limits,
    /// Manifest validation options (reserved namespaces).
    pub manifest: ManifestOptions,
    /// The `git` program used for `git.status` and git sources.
    pub git_program: PathBuf,
    /// Bounds of `host.actions` documents.
    pub host_actions: HostActionsLimits,
    /// Validated `host.actions` renders kept for a later `invoke`, one per (session key,
    /// bundle, descriptor, realm) (1024). Past it the least recently rendered is forgotten:
    /// its `invoke` then fails `unknown_action` until the slot is rendered again.
    pub max_host_actions_renders: usize,
    /// Kernel bounds: event queues, the idle time after which a project realm is reclaimed.
    pub kernel: KernelOptions,
    /// How long an MCP bridge ([`crate::McpProcess::bridge`]) keeps forwarding a server's
    /// output after its client closed its input, before the server is stopped (2 s).
    pub mcp_drain: Duration,
    /// How the host learns of changes other processes commit to the store (inotify, or a
    /// 500 ms poll without it).
    pub store_watch: WatchOptions,
    /// How long after a wake-up the host refreshes, so one change (several renames) costs one
    /// refresh (20 ms).
    pub refresh_debounce: Duration,
    /// How long an uninstall or replace waits for every other host to let go of the old tree
    /// before leaving it in the trash for a later open to delete (5 s: another host needs up to
    /// 1 s to notice and the stop grace to stop its processes).
    pub retire_wait: Duration,
    /// How many times a change is planned again when another process committed first (3).
    pub stale_retries: u32,
    /// Catalog sources: programs, deadlines and size bounds (see [`crate::HubOptions`]).
    pub hub: crate::hub::HubOptions,
}

impl HostOptions {
    /// Defaults for a store at `plugins_dir`, with the current directory as working directory.
    pub fn new(plugins_dir: impl Into<PathBuf>) -> Self {
        Self {
            plugins_dir: plugins_dir.into(),
            host_name: "c2-plugins".to_owned(),
            host_version: env!("CARGO_PKG_VERSION").to_owned(),
            working_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            handshake_timeout: Duration::from_secs(10),
            crash_limit: 3,
            crash_window: Duration::from_secs(60),
            invoke_deadline: None,
            peer: PeerOptions::default(),
            log_message_max_bytes: 64 * 1024,
            max_value_tree_bytes: 32 * 1024 * 1024,
            supervisor: SupervisorOptions::default(),
            run: RunOptions::default(),
            limits: Limits::default(),
            manifest: ManifestOptions::default(),
            git_program: PathBuf::from("git"),
            host_actions: HostActionsLimits::default(),
            max_host_actions_renders: 1024,
            kernel: KernelOptions::default(),
            mcp_drain: Duration::from_secs(2),
            store_watch: WatchOptions::default(),
            refresh_debounce: Duration::from_millis(20),
            retire_wait: Duration::from_secs(5),
            stale_retries: 3,
            hub: crate::hub::HubOptions::default(),
        }
    }
}
