//! The `c2-plugins` command line: validate, install, run and inspect C2 plugin bundles.
//!
//! Every command is a thin adapter over the library crates: validate, schema and scaffold over
//! the bundle store, everything else over one `c2_host::PluginHost` per invocation, shut down
//! before the process exits. The contract (names, options, output shapes and exit codes) is in
//! docs/cli.md and other tools rely on it; `ui` and `invoke-ui` extend it.

mod commands;
mod output;
mod report;
mod serve;
mod session;
use std::path::PathBuf;
use std::process::ExitCode;

use c2_host::{InstallOptions, Loading, StateChange};
use clap::{Parser, Subcommand};

use crate::commands::hub::MarketplaceAction;
use crate::commands::install::Installing;
use crate::commands::policy::Change;
use crate::commands::{CallArgs, ProjectArg};
use crate::output::{Failure, Format, Out};
use crate::session::{Session, Settings, StoreUse};

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
    /// Develop a bundle: install its working directory, reload it on every save until Ctrl-C
    Dev(commands::dev::DevArgs),
    /// Validate and store a bundle from a directory, an archive, a git source or a catalog
    /// entry; runs nothing
    Install {
        /// A bundle directory, a .tar.gz/.tgz/.zip archive, git+URL#REF:SUBDIR, or a GitHub
        /// repository or /tree/<ref>/<path> URL; with --marketplace (or configured catalogs),
        /// a catalog entry NAME[@VERSION]
        #[arg(value_name = "SOURCE", required_unless_present = "locked")]
        source: Option<String>,
        /// The catalog to install NAME[@VERSION] from: a marketplace.json, a directory holding
        /// one, a git+URL#REF:DIR, a GitHub URL, or the name of a configured catalog
        #[arg(long, value_name = "PATH|URL|NAME")]
        marketplace: Option<String>,
        /// Install exactly the set a lock file records, each fetched from its recorded source
        /// and verified against its digest before anything is stored
        #[arg(long, value_name = "FILE", conflicts_with_all = ["source", "marketplace", "trust", "enable"])]
        locked: Option<PathBuf>,
        /// Trust the installed content right away (trust is bound to its digest)
        #[arg(long)]
        trust: bool,
        /// Enable the bundle for the user right away
        #[arg(long)]
        enable: bool,
    },
    /// Stop the bundle's processes in every realm, then remove it, its data and its runtime policy
    Uninstall {
        /// The id printed by install or list
        #[arg(value_name = "ID")]
        id: String,
        /// Keep the bundle's data directory (.data/<ID>/ in the plugin store)
        #[arg(long)]
        keep_data: bool,
    },
    /// Add to the user's deny list (or list the deny and allow lists with --list)
    Block(commands::block::BlockArgs),
    /// Remove an entry from the user's deny list (managed entries stay)
    Unblock(commands::block::UnblockArgs),
    /// List installed bundles: trust, enablement, state and contributions
    List,
    /// One installed bundle in full: provenance, digest, trust, enablement, components
    Info {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Write the installed set as a lock file (or, with `verify`, compare one with the store)
    Lock(commands::lock::LockArgs),
    /// The configured catalogs (marketplace.json) kept in the plugin store
    Marketplace {
        #[command(subcommand)]
        action: MarketplaceAction,
    },
    /// Find catalog entries whose name, description or keywords contain TEXT (any case)
    Search {
        /// The text to look for (empty lists every entry)
        #[arg(value_name = "TEXT")]
        text: String,
        /// Search this catalog (a path, URL or configured name) [default: every configured one]
        #[arg(long, value_name = "PATH|URL|NAME")]
        marketplace: Option<String>,
    },
    /// Bundles installed from a catalog whose catalog entry has a newer version
    Outdated,
    /// Update bundles installed from a catalog to their entry's newer version, in place
    Update(commands::hub::UpdateArgs),
    /// Trust the installed content of a bundle
    Trust {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Withdraw trust: the bundle's processes stop and its commands disappear
    Untrust {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Enable a bundle (or one of its components) for the user, or in one project
    Enable {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
        #[command(flatten)]
        project: ProjectArg,
        /// One component only: `<KIND>:<LOCAL-ID>` (skill, ui-action, connector,
        /// language-server, mcp-server, scaffold, runtime-command), stored as
        /// `<ID>:<KIND>:<LOCAL-ID>`
        #[arg(long, value_name = "KIND:LOCAL-ID")]
        component: Option<String>,
    },
    /// Disable a bundle (or one of its components) for the user, or in one project
    Disable {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
        #[command(flatten)]
        project: ProjectArg,
        /// One component only: `<KIND>:<LOCAL-ID>` (skill, ui-action, connector,
        /// language-server, mcp-server, scaffold, runtime-command), stored as
        /// `<ID>:<KIND>:<LOCAL-ID>`
        #[arg(long, value_name = "KIND:LOCAL-ID")]
        component: Option<String>,
    },
    /// Make a project follow the user's choice for a bundle again; with --component, drop
    /// that component's choice in the scope
    Inherit {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
        /// The project directory (required unless --component)
        #[arg(long, value_name = "DIR", required_unless_present = "component")]
        project: Option<PathBuf>,
        /// One component only: `<KIND>:<LOCAL-ID>` (skill, ui-action, connector,
        /// language-server, mcp-server, scaffold, runtime-command), stored as
        /// `<ID>:<KIND>:<LOCAL-ID>`
        #[arg(long, value_name = "KIND:LOCAL-ID")]
        component: Option<String>,
    },
    /// The full catalog of a realm: built-in modules and bundles with their states
    Catalog {
        #[command(flatten)]
        project: ProjectArg,
    },
    /// The commands visible in a realm, with owner, visibility and state
    Commands {
        #[command(flatten)]
        project: ProjectArg,
    },
    /// Invoke a command in the user realm or a project realm and print its JSON result
    Invoke {
        /// The command name, e.g. hello.status
        #[arg(value_name = "COMMAND")]
        command: String,
        #[command(flatten)]
        call: CallArgs,
        /// Run in this process even when a `c2-plugins serve` for the plugins directory answers
        #[arg(long)]
        no_service: bool,
    },
    /// For authors: install a bundle directory, trust, enable, invoke, unload
    Run {
        /// The bundle directory
        #[arg(value_name = "BUNDLE-DIR")]
        bundle: PathBuf,
        /// The command name
        #[arg(value_name = "COMMAND")]
        command: String,
        #[command(flatten)]
        call: CallArgs,
    },
    /// Plan a policy change and write it to a plan file
    Plan {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
        /// The change to plan
        #[arg(value_enum, value_name = "ACTION")]
        action: commands::plan::Action,
        #[command(flatten)]
        project: ProjectArg,
        /// The new configuration for `configure`: JSON or @FILE
        #[arg(long, value_name = "JSON")]
        config: Option<String>,
        /// Where to write the plan [default: <ID>.plan.json]
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Plan one component's choice instead: `<KIND>:<LOCAL-ID>` (enable, disable, inherit)
        #[arg(long, value_name = "KIND:LOCAL-ID")]
        component: Option<String>,
    },
    /// Apply a plan file while its revisions are current
    Apply {
        /// A file written by `plan`
        #[arg(value_name = "PLAN-FILE")]
        file: PathBuf,
    },
    /// Recovery: clear one bundle's policy, or all policy (leaving safe mode)
    Reset {
        /// The installed bundle whose policy to clear [default: all policy]
        #[arg(value_name = "ID")]
        id: Option<String>,
    },
    /// Find the enabled bundle, or pair, behind a problem by halving the enabled bundles
    Bisect(commands::bisect::Args),
    /// Play one side of a --record recording against a live other side; report the first difference
    Replay(commands::replay::Args),
    /// The UI descriptors of a realm, per slot (extends docs/cli.md)
    Ui {
        #[command(flatten)]
        project: ProjectArg,
    },
    /// Activate a bundle's UI descriptor through the host's checks (extends docs/cli.md)
    InvokeUi {
        /// The installed bundle's id
        #[arg(value_name = "ID")]
        id: String,
        /// The descriptor's id within the bundle
        #[arg(value_name = "UI-ID")]
        ui: String,
        #[command(flatten)]
        project: ProjectArg,
        /// The frontend session id passed in the context
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// For host.actions descriptors: render (default) or invoke
        #[arg(long, value_enum)]
        operation: Option<commands::ui::Operation>,
        /// For host.actions invoke: the rendered action's id
        #[arg(long, value_name = "ID")]
        action: Option<String>,
        /// Run in this process even when a `c2-plugins serve` for the plugins directory
        /// answers (then a render is forgotten when this call ends)
        #[arg(long)]
        no_service: bool,
    },
    /// Start the language server the active plugins map to LANGUAGE and bridge it to stdio;
    /// or, with --list, show every language mapping
    Lsp {
        /// A Monaco language id, matched case-insensitively
        #[arg(value_name = "LANGUAGE", required_unless_present = "list")]
        language: Option<String>,
        /// The project directory (the server's working directory); with --list, the realm
        /// to list [default: the user realm]
        #[arg(long, value_name = "DIR", required_unless_present = "list")]
        project: Option<PathBuf>,
        /// List each language server with its languages, the winner per language, conflicts
        /// and the built-in mappings instead of starting one
        #[arg(long, conflicts_with = "language")]
        list: bool,
        #[command(flatten)]
        record: commands::record::RecordArgs,
    },
    /// The MCP servers a session in this realm would be composed with (starts nothing)
    Mcp {
        #[command(subcommand)]
        action: Option<McpAction>,
        #[command(flatten)]
        project: ProjectArg,
    },
    /// The skills, prompt commands and subagents a session in this realm is offered
    Skills(ProjectArg),
    /// The scene and pipeline files of this realm's enabled bundles, each checked
    Scenes(ProjectArg),
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
    /// For authors: validate, spawn the runtime, handshake, invoke, check it exits on stdin EOF
    Check {
        /// The bundle directory
        #[arg(value_name = "BUNDLE-DIR")]
        bundle: PathBuf,
    },
    /// One live host for the plugins directory, serving the versioned relay (docs/relay.md)
    /// until SIGTERM, SIGINT or (with --stdio) the end of stdin
    Serve {
        /// Serve one client on stdin/stdout (for a frontend that spawns the service)
        #[arg(long, conflicts_with = "socket", required_unless_present = "socket")]
        stdio: bool,
        /// Serve clients of this user on a Unix socket [default: <plugins-dir>/.serve.sock]
        #[arg(long, value_name = "PATH", num_args = 0..=1)]
        socket: Option<Option<PathBuf>>,
        /// Socket clients connected at once
        #[arg(long, value_name = "N", default_value_t = 16)]
        max_connections: usize,
        /// Event subscriptions one client may hold at once
        #[arg(long, value_name = "N", default_value_t = 64)]
        max_subscriptions: usize,
        #[command(flatten)]
        record: commands::record::RecordArgs,
    },
    #[command(flatten)]
    Health(commands::status::HealthCommand),
    /// For authors: create a bundle with one command that passes `check` straight away
    New {
        /// The bundle name (also the directory name)
        #[arg(value_name = "NAME")]
        name: String,
        /// The runtime language
        #[arg(long, value_enum)]
        lang: commands::new::Lang,
        /// Where to create the bundle directory [default: the current directory]
        #[arg(long, value_name = "PARENT")]
        dir: Option<PathBuf>,
    },
}

/// `mcp` subcommands.
#[derive(Debug, Subcommand)]
enum McpAction {
    /// Launch one stdio MCP server exactly as a session would and bridge it to stdio
    Run {
        /// The server, as <ID>/<SERVER>
        #[arg(value_name = "ID/SERVER")]
        target: String,
        #[command(flatten)]
        project: ProjectArg,
    },
}

fn main() -> ExitCode {
    // Re-entered as the supervisor shim of a plugin process, this never returns; it must come
    // before anything starts a thread.
    c2_supervisor::shim::run_if_requested();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    output::init_logging(cli.verbose, cli.quiet);
    let mut out = Out::new(cli.format, cli.quiet);
    let _recording = match commands::record::start(&cli.command) {
        Ok(recording) => recording,
        Err(failure) => return out.fail(&failure),
    };
    let result = match &cli.command {
        Command::Validate { paths } => commands::validate::run(&mut out, paths),
        Command::Schema => commands::schema::run(&mut out),
        Command::Block(args) => commands::block::block(&mut out, cli.plugins_dir.as_deref(), args),
        Command::Unblock(a) => commands::block::unblock(&mut out, cli.plugins_dir.as_deref(), a),
        Command::Replay(args) => commands::replay::run(&mut out, args, cli.handshake_timeout),
        Command::Dev(args) => commands::dev::run(&cli, &mut out, args),
        Command::Check { bundle } => commands::check::run(&mut out, bundle, cli.handshake_timeout),
        Command::New { name, lang, dir } => commands::new::run(
            &mut out,
            &commands::new::Request {
                name,
                lang: *lang,
                dir: dir.as_deref(),
            },
        ),
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
        Command::Serve {
            stdio,
            socket,
            max_connections,
            max_subscriptions,
            ..
        } => {
            let transport = match socket {
                Some(path) if !stdio => serve::Transport::Socket(path.clone()),
                _ => serve::Transport::Stdio,
            };
            let limits = (*max_connections, *max_subscriptions);
            serve::blocking(
                runtime_and_settings(&cli),
                &transport,
                limits,
                cli.format == Format::Json,
            )
        }
        _ => on_host(&cli, &mut out),
    };
    if matches!(
        cli.command,
        Command::Lsp { list: false, .. }
            | Command::Serve { stdio: true, .. }
            | Command::Mcp {
                action: Some(McpAction::Run { .. }),
                ..
            }
    ) {
        // stdout is the editor's protocol channel: our failures must not land on it.
        out.format = output::Format::Human;
    }
    match result {
        Ok(code) => code,
        Err(failure) => out.fail(&failure),
    }
}

/// Result of a command: the exit code on success paths (a validation that found problems exits 1
/// after printing its report), or a failure to print in the chosen format.
type CmdResult = Result<ExitCode, Failure>;

/// The single-threaded runtime a command runs on, and the global options it needs.
fn runtime_and_settings(cli: &Cli) -> Result<(tokio::runtime::Runtime, Settings), Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            Failure::environment("io", format!("cannot start the async runtime: {error}"))
        })?;
    let settings = Settings {
        plugins_dir: cli.plugins_dir.clone(),
        handshake_timeout: cli.handshake_timeout,
        verbose: cli.verbose,
    };
    Ok((runtime, settings))
}

/// Runs a host command on a single-threaded runtime; the host is shut down before returning.
fn on_host(cli: &Cli, out: &mut Out) -> CmdResult {
    let (runtime, settings) = runtime_and_settings(cli)?;
    let result = runtime.block_on(host_command(&cli.command, &settings, out));
    // tokio reads stdin on a blocking thread; a finished language-server bridge must not wait
    // for the editor to close it.
    runtime.shutdown_background();
    result
}

async fn host_command(command: &Command, settings: &Settings, out: &mut Out) -> CmdResult {
    let mut preflighted = None;
    match command {
        Command::Run {
            bundle,
            command,
            call,
        } => {
            let call = commands::invoke::Call {
                command,
                args: call.args.as_deref(),
                project: call.project.project.as_deref(),
            };
            return commands::invoke::run(out, settings, bundle, &call).await;
        }
        // A refused local bundle leaves no trace, not even a new store directory; a valid one
        // is collected here once and stored as it is.
        Command::Install {
            source: Some(source),
            marketplace: None,
            ..
        } => preflighted = commands::install::preflight(out, source)?,
        _ => {}
    }
    if let Some(served) = serve::through_service(command, settings, out).await {
        return served;
    }
    let usage = match command {
        Command::Install { .. }
        | Command::Invoke { .. }
        | Command::Marketplace {
            action: MarketplaceAction::Add { .. },
        } => StoreUse::Create,
        _ => StoreUse::Existing,
    };
    // A command on one bundle loads only that bundle (and any sharing a command id with it),
    // so it costs the same in a store of ten bundles or of a thousand.
    let loading = match command {
        Command::Install { locked: None, .. }
        | Command::Trust { .. }
        | Command::Untrust { .. }
        | Command::Enable { .. }
        | Command::Disable { .. }
        | Command::Uninstall { .. } => Loading::OnDemand,
        _ => Loading::All,
    };
    let session = Session::open(settings, usage, loading).await?;
    let host = &session.host;
    let result = session::until_signal(async {
        match command {
            Command::Install {
                locked: Some(file), ..
            } => commands::lock::install(out, host, &session.store, file).await,
            Command::Install {
                source,
                trust,
                enable,
                marketplace,
                ..
            } => {
                let source = source.as_deref().unwrap_or_default();
                let options = InstallOptions::default()
                    .with_trust(*trust)
                    .with_enable(*enable);
                let store = &session.store;
                if let Some(fetched) = preflighted.take() {
                    let installing = Installing::Fetched(Box::new(fetched));
                    commands::install::run(out, host, store, source, installing, options).await
                } else {
                    match host.resolve_source(source, marketplace.as_deref()) {
                        Ok(parsed) if parsed.is_catalog() => {
                            commands::hub::install(out, host, store, &parsed, options).await
                        }
                        Ok(parsed) => {
                            let installing = Installing::Source(parsed);
                            commands::install::run(out, host, store, source, installing, options)
                                .await
                        }
                        Err(error) => Err(session::failure(error)),
                    }
                }
            }
            Command::Marketplace { action } => match action {
                MarketplaceAction::Add { location, name } => {
                    commands::hub::add(out, host, location, name.as_deref()).await
                }
                MarketplaceAction::Remove { name } => commands::hub::remove(out, host, name),
                MarketplaceAction::List => commands::hub::list(out, host),
            },
            Command::Search { text, marketplace } => {
                commands::hub::search(out, host, text, marketplace.as_deref()).await
            }
            Command::Outdated => commands::hub::outdated(out, host).await,
            Command::Update(args) => commands::hub::update(out, host, args).await,
            Command::Uninstall { id, keep_data } => {
                commands::uninstall::run(out, host, &session.store, id, *keep_data).await
            }
            Command::List => commands::list::run(out, host, &session.store),
            Command::Info { id } => commands::info::run(out, host, id),
            Command::Lock(args) => commands::lock::run(out, host, args),
            Command::Trust { id } => {
                commands::policy::run(out, host, id, Change::Trust, None).await
            }
            Command::Untrust { id } => {
                commands::policy::run(out, host, id, Change::Untrust, None).await
            }
            Command::Enable {
                id,
                project,
                component,
            } => {
                let project = project.project.as_deref();
                commands::policy::switch(
                    out,
                    host,
                    id,
                    component.as_deref(),
                    StateChange::Enable,
                    project,
                )
                .await
            }
            Command::Disable {
                id,
                project,
                component,
            } => {
                let project = project.project.as_deref();
                commands::policy::switch(
                    out,
                    host,
                    id,
                    component.as_deref(),
                    StateChange::Disable,
                    project,
                )
                .await
            }
            Command::Inherit {
                id,
                project,
                component,
            } => {
                let project = project.as_deref();
                commands::policy::switch(
                    out,
                    host,
                    id,
                    component.as_deref(),
                    StateChange::Inherit,
                    project,
                )
                .await
            }
            Command::Catalog { project } => {
                commands::catalog::catalog(out, host, project.project.as_deref())
            }
            Command::Commands { project } => {
                commands::catalog::commands(out, host, project.project.as_deref()).await
            }
            Command::Invoke { command, call, .. } => {
                let call = commands::invoke::Call {
                    command,
                    args: call.args.as_deref(),
                    project: call.project.project.as_deref(),
                };
                commands::invoke::invoke(out, host, &call).await
            }
            Command::Plan {
                id,
                action,
                project,
                config,
                out: file,
                component,
            } => {
                let request = commands::plan::Request {
                    id,
                    action: *action,
                    project: project.project.as_deref(),
                    config: config.as_deref(),
                    out: file.as_deref(),
                    component: component.as_deref(),
                };
                commands::plan::plan(out, host, &request).await
            }
            Command::Apply { file } => commands::plan::apply(out, host, file).await,
            Command::Reset { id } => commands::policy::reset(out, host, id.as_deref()).await,
            Command::Bisect(args) => commands::bisect::run(out, host, settings, args).await,
            Command::Ui { project } => {
                commands::ui::catalog(out, host, project.project.as_deref()).await
            }
            Command::InvokeUi {
                id,
                ui,
                project,
                session,
                operation,
                action,
                ..
            } => {
                let request = commands::ui::Request {
                    id,
                    ui,
                    project: project.project.as_deref(),
                    session: session.as_deref(),
                    operation: *operation,
                    action: action.as_deref(),
                };
                commands::ui::invoke(out, host, &request).await
            }
            Command::Lsp {
                language: Some(language),
                project: Some(project),
                list: false,
                ..
            } => commands::lsp::run(out, host, language, project).await,
            Command::Lsp { project, .. } => commands::lsp::list(out, host, project.as_deref()),
            Command::Health(c) => commands::status::run(out, host, settings, c).await,
            Command::Skills(p) => commands::skills::skills(out, host, p.project.as_deref()),
            Command::Scenes(p) => commands::skills::scenes(out, host, p.project.as_deref()),
            Command::Mcp { action, project } => match action {
                None => {
                    commands::mcp::list(out, host, project.project.as_deref(), settings.verbose > 0)
                }
                Some(McpAction::Run {
                    target,
                    project: run_project,
                }) => {
                    let project = run_project
                        .project
                        .as_deref()
                        .or(project.project.as_deref());
                    commands::mcp::run(out, host, target, project).await
                }
            },
            // Answered before the host was opened.
            Command::Validate { .. }
            | Command::Schema
            | Command::Block(_)
            | Command::Unblock(_)
            | Command::Scaffold { .. }
            | Command::Check { .. }
            | Command::New { .. }
            | Command::Serve { .. }
            | Command::Replay(_)
            | Command::Run { .. }
            | Command::Dev(_) => Ok(ExitCode::SUCCESS),
        }
    })
    .await;
    host.shutdown().await;
    result
}
