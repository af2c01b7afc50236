//! The `c2-plugins` command line: validate, install, run and inspect C2 plugin bundles.
//!
//! Every command is a thin adapter over the library crates; the contract (names, options,
//! output shapes and exit codes) is in docs/cli.md and other tools rely on it.

mod commands;
mod output;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::output::{Failure, Format, Out};

#[derive(Debug, Parser)]
#[command(
    name = "c2-plugins",
    version,
    about = "Validate, install, run and inspect C2 plugin bundles",
    propagate_version = true
)]
struct Cli {
    /// The plugin store [default: $C2_PLUGINS_DIR, else ~/.codetwo/plugins]
    #[arg(long, global = true, value_name = "DIR")]
    plugins_dir: Option<PathBuf>,

    /// Output format: readable text, or one JSON document on stdout
    #[arg(long, global = true, value_enum, default_value_t = Format::Human)]
    format: Format,

    /// More log output on stderr (repeat for more)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    /// Only errors on stderr
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,

    /// How long a plugin process may take to answer `initialize`, e.g. 10s or 500ms
    #[arg(long, global = true, value_name = "DURATION", default_value = "10s", value_parser = output::parse_duration)]
    handshake_timeout: std::time::Duration,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate bundle directories, archives or a marketplace.json
    Validate {
        /// Bundle directories, .tar.gz/.tgz/.zip archives, or marketplace.json files
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Print the JSON Schema for plugin.json with extensions.dev.codetwo 1.2.0
    Schema,
    /// Validate and store a bundle directory or .tar.gz/.tgz/.zip archive; runs nothing
    Install {
        /// A bundle directory or archive (git and GitHub sources are not supported yet)
        #[arg(value_name = "SOURCE")]
        source: PathBuf,
        /// Trust the bundle's runtime (not supported yet by this build)
        #[arg(long)]
        trust: bool,
        /// Enable the bundle (not supported yet by this build)
        #[arg(long)]
        enable: bool,
    },
    /// Remove an installed bundle
    Uninstall {
        /// The id printed by install or list
        #[arg(value_name = "ID")]
        id: String,
    },
    /// List installed bundles and their contributions
    List,
    /// Apply an installed bundle's scaffold to a directory; writes nothing on any conflict
    Scaffold {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
        /// The scaffold (or template) folder name
        #[arg(value_name = "SCAFFOLD")]
        scaffold: String,
        /// An existing directory to write into
        #[arg(value_name = "TARGET-DIR")]
        target: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    output::init_logging(cli.verbose, cli.quiet);
    let mut out = Out::new(cli.format);
    let result = match &cli.command {
        Command::Validate { paths } => commands::validate::run(&mut out, paths),
        Command::Schema => commands::schema::run(&mut out),
        Command::Install {
            source,
            trust,
            enable,
        } => commands::install::run(
            &mut out,
            &commands::install::Request {
                source,
                plugins_dir: cli.plugins_dir.as_deref(),
                trust: *trust,
                enable: *enable,
            },
        ),
        Command::Uninstall { id } => {
            commands::uninstall::run(&mut out, cli.plugins_dir.as_deref(), id)
        }
        Command::List => commands::list::run(&mut out, cli.plugins_dir.as_deref()),
        Command::Scaffold {
            id,
            scaffold,
            target,
        } => commands::scaffold::run(
            &mut out,
            &commands::scaffold::Request {
                plugins_dir: cli.plugins_dir.as_deref(),
                id,
                scaffold,
                target,
            },
        ),
    };
    match result {
        Ok(code) => code,
        Err(failure) => out.fail(&failure),
    }
}

/// Result of a command: the exit code on success paths (a validation that found problems exits 1
/// after printing its report), or a failure to print in the chosen format.
type CmdResult = Result<ExitCode, Failure>;
