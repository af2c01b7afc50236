//! One module per command (or family of commands), each an adapter from parsed options to
//! the libraries: the bundle store for validate and scaffold, the plugin host for the rest.
//! Helpers shared by the commands that touch the plugin store live here.

pub(crate) mod bisect;
pub(crate) mod block;
pub(crate) mod catalog;
pub(crate) mod check;
pub(crate) mod dev;
pub(crate) mod hub;
pub(crate) mod info;
pub(crate) mod install;
pub(crate) mod invoke;
pub(crate) mod list;
pub(crate) mod lock;
pub(crate) mod lsp;
pub(crate) mod mcp;
pub(crate) mod new;
pub(crate) mod plan;
pub(crate) mod policy;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod scaffold;
pub(crate) mod schema;
pub(crate) mod skills;
pub(crate) mod status;
pub(crate) mod ui;
pub(crate) mod uninstall;
pub(crate) mod validate;

use std::path::{Path, PathBuf};

use c2_bundle_collector::{Error, Store, StoreOptions};

use crate::output::Failure;

/// `--project DIR`: the project realm; the user realm when absent.
#[derive(Debug, clap::Args)]
pub(crate) struct ProjectArg {
    /// The project directory whose realm to use [default: the user realm]
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
}

/// The arguments and realm of a command call, and its recording.
#[derive(Debug, clap::Args)]
pub(crate) struct CallArgs {
    /// The command's arguments: JSON, or @FILE [default: {}]
    #[arg(long, value_name = "JSON")]
    pub(crate) args: Option<String>,
    #[command(flatten)]
    pub(crate) project: ProjectArg,
    #[command(flatten)]
    pub(crate) record: record::RecordArgs,
}

/// The variable that names the plugin store when `--plugins-dir` is not given.
pub(crate) const PLUGINS_DIR_VAR: &str = "C2_PLUGINS_DIR";

/// `--plugins-dir`, else `$C2_PLUGINS_DIR`, else `~/.codetwo/plugins`.
pub(crate) fn plugins_dir(explicit: Option<&Path>) -> Result<PathBuf, Failure> {
    if let Some(dir) = explicit {
        return Ok(dir.to_owned());
    }
    if let Some(dir) = std::env::var_os(PLUGINS_DIR_VAR).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".codetwo").join("plugins")),
        None => Err(Failure::environment(
            "no_plugins_dir",
            format!(
                "HOME is not set, so there is no default plugin store; pass --plugins-dir DIR or set {PLUGINS_DIR_VAR}"
            ),
        )),
    }
}

/// Opens the store for a command that only reads or removes: a store directory that does not
/// exist yet holds nothing, and is not created just to find that out.
pub(crate) fn open_existing(dir: &Path) -> Result<Option<Store>, Failure> {
    if !dir.exists() {
        return Ok(None);
    }
    Store::open(dir, StoreOptions::default())
        .map(Some)
        .map_err(store_failure)
}

/// Maps a collector or store error to its JSON kind and exit code (docs/cli.md).
pub(crate) fn store_failure(error: Error) -> Failure {
    let message = error.to_string();
    match error {
        Error::NotInstalled { .. } => Failure::operation("not_installed", message),
        Error::InvalidBundle { .. } => Failure::operation("invalid_bundle", message),
        Error::UnknownScaffold { .. } => Failure::operation("unknown_scaffold", message),
        Error::ScaffoldConflict { .. } => Failure::operation("scaffold_conflict", message),
        Error::UnsafePath { .. } => Failure::operation("unsafe_path", message),
        Error::InjectedFault(_) => Failure::operation("injected_fault", message),
        Error::InvalidId { .. } => Failure::environment("invalid_id", message),
        Error::InvalidTarget { .. } => Failure::environment("invalid_target", message),
        Error::CorruptRecord { .. } => Failure::environment("corrupt_store", message),
        Error::SettingsTooLarge { .. } => Failure::environment("corrupt_store", message),
        Error::Io { .. } => Failure::environment("unreadable_path", message),
        Error::NotADirectory { .. }
        | Error::UnsupportedArchive { .. }
        | Error::ArchiveSupportNotBuilt { .. } => Failure::environment("not_a_bundle", message),
        // A failure this command line does not know yet is the store's.
        _ => Failure::environment("store_failed", message),
    }
}
