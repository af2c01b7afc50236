//! Every knob of the host, with the defaults of decisions.md. An embedder changes them here;
//! there are no hidden constants. Every options struct is `#[non_exhaustive]`: build it with
//! `new`/`default` and the `with_*` setters (or assign its public fields), so a new knob is
//! not a breaking change.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use c2_bundle_collector::{Limits, StoreOptions};
use c2_kernel::KernelOptions;
use c2_lock::lock;
use c2_manifest::{HostActionsLimits, ManifestOptions};
use c2_policy::{PolicyOptions, WatchOptions};
use c2_protocol::PeerOptions;
use c2_supervisor::{RunOptions, SupervisorOptions};

/// Where the host reads the time for its crash windows, plan expiry and idle reaping. The
/// default is [`SystemClock`]; a test hands in a [`ManualClock`] to move time by hand.
pub trait Clock: std::fmt::Debug + Send + Sync {
    /// The current instant. Must never go backwards.
    fn now(&self) -> Instant;
}

/// The monotonic system clock ([`Instant::now`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that stands still until [`ManualClock::advance`] moves it, for tests of time-bound
/// behaviour (plan expiry, crash windows, idle reaping) that must not wait in real time. It
/// starts at the real instant it was made, so it is never behind times the host took itself.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Instant>,
}

impl ManualClock {
    /// A clock standing at the current instant.
    pub fn new() -> Self {
        Self {
            now: Mutex::new(Instant::now()),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = lock(&self.now);
        *now += by;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *lock(&self.now)
    }
}

/// How a [`crate::PluginHost`] is built. [`HostOptions::new`] reads nothing from the process
/// environment: every default is written down on its field.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HostOptions {
    /// The plugin store: bundles, policy and plugin data directories. No default: `open`
    /// refuses an empty path.
    pub plugins_dir: PathBuf,
    /// Sent to plugins as `initialize.host.name` (`c2-host`; the command line sends
    /// `c2-plugins`).
    pub host_name: String,
    /// Sent to plugins as `initialize.host.version` (this crate's version).
    pub host_version: String,
    /// The directory a user-realm `git.status` resolves a relative `cwd` against, and the
    /// user-realm UI `context.cwd` when the frontend supplies none. `None` (the default): the
    /// process's current directory, read once when the host opens.
    pub working_dir: Option<PathBuf>,
    /// The runtime the host spawns its tasks on (store watch, idle reaping, plugin
    /// connections) and runs its operations on. `None` (the default): the runtime
    /// [`crate::PluginHost::open`] is polled in. With a handle, the host may be called from
    /// any other runtime (or none): its connections never depend on the caller's runtime
    /// staying alive. That runtime must keep running while the host lives: a multi-thread
    /// runtime, or a current-thread one that some thread keeps driving (`block_on`).
    pub runtime: Option<tokio::runtime::Handle>,
    /// Where the host reads the time ([`SystemClock`]).
    pub clock: Arc<dyn Clock>,
    /// How the bundle store is opened (its one switch is the crash-test hook of
    /// c2-bundle-collector's `fault-injection` feature, which no shipped build enables).
    pub store: StoreOptions,
    /// The policy store: plan lifetime and count (10 min, 64), the managed policy file (none).
    pub policy: PolicyOptions,
    /// How long a spawned runtime may take to answer `initialize` (the protocol's 10 s).
    pub handshake_timeout: Duration,
    /// Crashes after activation tolerated within [`HostOptions::crash_window`] before the
    /// runtime stays failed until it is reloaded (3 in 60 s).
    pub crash_limit: usize,
    /// See [`HostOptions::crash_limit`].
    pub crash_window: Duration,
    /// An optional deadline for `command/invoke` and for the runtime's host callbacks (the
    /// protocol sets none). Past it the process is stopped and every call pending on it fails
    /// `deadline_exceeded`; set it so that a caller that stops waiting never has to drop an
    /// invoke future (see `PluginHost::invoke`). A bundle's `runtime.commandTimeoutMs` replaces
    /// it for that runtime.
    pub invoke_deadline: Option<Duration>,
    /// Bounds of every plugin connection.
    pub peer: PeerOptions,
    /// Shown every frame of every plugin connection (`--record`); none by default.
    pub frame_tap: Option<c2_protocol::FrameTap>,
    /// Longest `log` message from a plugin passed on, in bytes; the rest is cut with a marker,
    /// like a stderr line (64 KiB).
    pub log_message_max_bytes: usize,
    /// The most memory a plugin's result, error `data`, `command/call` args or event payload
    /// may take once read into a `serde_json::Value`, as estimated from its text before it is
    /// read (32 MiB, 4x the frame limit). A dense document over it (8 MiB of `[0,0,...]` would
    /// take ~300 MiB) is refused: a result as `result_too_large`, args with `-32602`, an event
    /// or an error's `data` dropped.
    pub max_value_tree_bytes: usize,
    /// Stop grace and stderr handling of plugin processes.
    pub supervisor: SupervisorOptions,
    /// Caps and deadline of one-shot host commands such as `git`.
    pub run: RunOptions,
    /// Bundle collection limits.
    pub limits: Limits,
    /// Manifest validation options (reserved namespaces).
    pub manifest: ManifestOptions,
    /// The `git` program used for `git.status` and git sources (`git`, found on `PATH`).
    pub git_program: PathBuf,
    /// Bounds of `host.actions` documents.
    pub host_actions: HostActionsLimits,
    /// Validated `host.actions` renders kept for a later `invoke`, one per (session key,
    /// bundle, descriptor, realm) (1024). Past it the least recently rendered is forgotten:
    /// its `invoke` then fails `unknown_action` until the slot is rendered again.
    pub max_host_actions_renders: usize,
    /// Kernel bounds: event queues, the idle time after which a project realm is reclaimed.
    pub kernel: KernelOptions,
    /// How often the host reclaims idle project realms (60 s).
    pub reap_interval: Duration,
    /// How long an MCP bridge (c2-contributions' `McpProcess::drain`) keeps forwarding a server's
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
    pub hub: c2_sources::HubOptions,
    /// Which installed bundles the host loads ([`Loading::All`]).
    pub loading: Loading,
}

/// Which installed bundles a host loads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Loading {
    /// Every one, when it opens: what a desktop, a server or any listing needs.
    #[default]
    All,
    /// Only those an operation names, for a process that acts on one bundle and exits (the
    /// command line's `install`, `trust`, `enable`, ...), so its cost does not grow with the
    /// store. Nothing loads at open; a bundle loads when an id-taking call (trust, untrust,
    /// set_state, uninstall, install of a bundle already there) first names it, together with
    /// every installed bundle that shares a command id with it, transitively
    /// ([`c2_bundle_collector::Store::command_neighbours`]), so a command conflict is found
    /// exactly as with all of them loaded; the typosquat check at install reads only the
    /// records of look-alike ids ([`c2_bundle_collector::Store::lookalike_warnings`]). A
    /// refresh re-reads only what is loaded. Listings (`list`, `commands`, `catalog`, the
    /// contributions) show only what is loaded: use [`Loading::All`] for them.
    OnDemand,
}

impl Default for HostOptions {
    /// The defaults with an empty `plugins_dir`, which must be set before `open`.
    fn default() -> Self {
        Self {
            plugins_dir: PathBuf::new(),
            host_name: "c2-host".to_owned(),
            host_version: env!("CARGO_PKG_VERSION").to_owned(),
            working_dir: None,
            runtime: None,
            clock: Arc::new(SystemClock),
            store: StoreOptions::default(),
            policy: PolicyOptions::default(),
            handshake_timeout: Duration::from_secs(10),
            crash_limit: 3,
            crash_window: Duration::from_secs(60),
            invoke_deadline: None,
            peer: PeerOptions::default(),
            frame_tap: None,
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
            reap_interval: Duration::from_secs(60),
            mcp_drain: Duration::from_secs(2),
            store_watch: WatchOptions::default(),
            refresh_debounce: Duration::from_millis(20),
            retire_wait: Duration::from_secs(5),
            stale_retries: 3,
            hub: c2_sources::HubOptions::default(),
            loading: Loading::All,
        }
    }
}

/// `with_<field>` setters of an options struct, each documented by the field it sets.
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

impl HostOptions {
    /// The defaults (see each field) for a store at `plugins_dir`.
    pub fn new(plugins_dir: impl Into<PathBuf>) -> Self {
        Self {
            plugins_dir: plugins_dir.into(),
            ..Self::default()
        }
    }

    /// Sets [`HostOptions::host_name`].
    #[must_use]
    pub fn with_host_name(mut self, name: impl Into<String>) -> Self {
        self.host_name = name.into();
        self
    }

    /// Sets [`HostOptions::host_version`].
    #[must_use]
    pub fn with_host_version(mut self, version: impl Into<String>) -> Self {
        self.host_version = version.into();
        self
    }

    /// Sets [`HostOptions::working_dir`].
    #[must_use]
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Sets [`HostOptions::runtime`]: the host spawns its tasks on `handle`.
    #[must_use]
    pub fn with_runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Sets [`HostOptions::clock`].
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Sets [`HostOptions::invoke_deadline`].
    #[must_use]
    pub fn with_invoke_deadline(mut self, deadline: Duration) -> Self {
        self.invoke_deadline = Some(deadline);
        self
    }

    /// Sets [`HostOptions::git_program`].
    #[must_use]
    pub fn with_git_program(mut self, program: impl Into<PathBuf>) -> Self {
        self.git_program = program.into();
        self
    }

    setters! {
        "HostOptions";
        with_store => store: StoreOptions,
        with_policy => policy: PolicyOptions,
        with_handshake_timeout => handshake_timeout: Duration,
        with_crash_limit => crash_limit: usize,
        with_crash_window => crash_window: Duration,
        with_peer => peer: PeerOptions,
        with_frame_tap => frame_tap: Option<c2_protocol::FrameTap>,
        with_log_message_max_bytes => log_message_max_bytes: usize,
        with_max_value_tree_bytes => max_value_tree_bytes: usize,
        with_supervisor => supervisor: SupervisorOptions,
        with_run => run: RunOptions,
        with_limits => limits: Limits,
        with_manifest => manifest: ManifestOptions,
        with_host_actions => host_actions: HostActionsLimits,
        with_max_host_actions_renders => max_host_actions_renders: usize,
        with_kernel => kernel: KernelOptions,
        with_reap_interval => reap_interval: Duration,
        with_mcp_drain => mcp_drain: Duration,
        with_store_watch => store_watch: WatchOptions,
        with_refresh_debounce => refresh_debounce: Duration,
        with_retire_wait => retire_wait: Duration,
        with_stale_retries => stale_retries: u32,
    }

    /// The working directory, once `open` has resolved it.
    pub fn resolved_working_dir(&self) -> &Path {
        self.working_dir.as_deref().unwrap_or(Path::new("/"))
    }
}

/// What to do with a freshly installed bundle (nothing, by default).
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct InstallOptions {
    /// Trust the installed content right away.
    pub trust: bool,
    /// Enable it for the user right away. With [`InstallOptions::trust`], both are one policy
    /// revision: an enablement that fails leaves the new content neither trusted nor enabled.
    pub enable: bool,
}

impl InstallOptions {
    /// Trusts and enables the bundle right away.
    pub fn trusted_and_enabled() -> Self {
        Self {
            trust: true,
            enable: true,
        }
    }

    /// Sets [`InstallOptions::trust`].
    #[must_use]
    pub fn with_trust(mut self, trust: bool) -> Self {
        self.trust = trust;
        self
    }

    /// Sets [`InstallOptions::enable`].
    #[must_use]
    pub fn with_enable(mut self, enable: bool) -> Self {
        self.enable = enable;
        self
    }
}
