//! A long-running host: opens a plugins directory, optionally installs, trusts and enables a
//! bundle, prints the events it is asked to watch, and serves calls read from stdin until stdin
//! closes or Ctrl-C, then shuts down (every plugin process stopped, awaited).
//!
//! ```text
//! cargo run -p c2-contributions --example long_running -- PLUGINS_DIR [--install BUNDLE] [--event NAME]...
//! ```
//!
//! Each stdin line is `COMMAND [ARGS_JSON]` for the user realm, `@PROJECT_DIR COMMAND
//! [ARGS_JSON]` for a project realm, `list` for the installed bundles or `ui` for the UI
//! catalog. Calls run on their own tasks, so a slow one does not hold up the next line; dropping
//! an invoke future would stop its plugin process (see docs/embedding.md), so none is dropped.
//!
//! From the repository root, with Node installed:
//!
//! ```text
//! echo 'hello.status {}' | cargo run -p c2-contributions --example long_running -- \
//!     /tmp/c2-example --install packs/hello-runtime
//! ```

#![expect(
    clippy::print_stdout,
    reason = "an example host prints what it is doing"
)]

use std::path::PathBuf;
use std::process::ExitCode;

use c2_contributions::Ui;
use c2_host::{HostError, HostOptions, InstallOptions, StateChange, Target};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

struct Args {
    plugins_dir: PathBuf,
    install: Option<String>,
    events: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: long_running PLUGINS_DIR [--install BUNDLE] [--event NAME]...";
    let mut args = std::env::args().skip(1);
    let plugins_dir = args.next().ok_or(usage)?.into();
    let (mut install, mut events) = (None, Vec::new());
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(usage)?;
        match flag.as_str() {
            "--install" => install = Some(value),
            "--event" => events.push(value),
            _ => return Err(usage.to_owned()),
        }
    }
    Ok(Args {
        plugins_dir,
        install,
        events,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(usage) => {
            println!("{usage}");
            return ExitCode::from(2);
        }
    };
    match serve(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            println!("error [{}]: {error}", error.kind());
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> Result<(), HostError> {
    let options = HostOptions::new(&args.plugins_dir).with_host_name("c2-host-example");
    let host = c2_contributions::open(options).await?;
    for problem in host.diagnostics() {
        println!("store: {problem}");
    }
    if let Some(source) = &args.install {
        // Installing runs nothing; trust binds to exactly this content; enable registers the
        // commands as dormant stubs. The first call spawns the runtime.
        let installed = host.install(source, InstallOptions::default()).await?;
        let id = installed.record.id;
        host.trust(&id).await?;
        host.set_state(&id, &Target::User, StateChange::Enable)
            .await?;
        println!("installed, trusted and enabled {id}");
    }

    // Each subscription ends at shutdown (or when dropped).
    for name in &args.events {
        let mut events = host.subscribe(name.clone())?;
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                println!("event {}: {}", event.name, event.payload);
            }
        });
    }

    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut calls = tokio::task::JoinSet::new();
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            _ = tokio::signal::ctrl_c() => break,
        };
        let Ok(Some(line)) = line else { break };
        match line.trim() {
            "" => {}
            "list" => {
                for bundle in host.list() {
                    println!(
                        "{} {} {}",
                        bundle.id,
                        bundle.version.as_deref().unwrap_or("-"),
                        bundle.state
                    );
                }
            }
            "ui" => match host.ui_catalog(&Target::User) {
                Ok(slots) => {
                    for (slot, entries) in slots {
                        for entry in entries {
                            println!("{}: {} -> {}", slot.as_str(), entry.label, entry.command);
                        }
                    }
                }
                Err(error) => println!("ui [{}]: {error}", error.kind()),
            },
            request => {
                let (target, rest) = match request.strip_prefix('@') {
                    Some(rest) => {
                        let (dir, rest) = rest.split_once(' ').unwrap_or((rest, ""));
                        (Target::Project(dir.into()), rest.trim())
                    }
                    None => (Target::User, request),
                };
                let (command, json) = rest.split_once(' ').unwrap_or((rest, "{}"));
                let args: Value = match serde_json::from_str(json) {
                    Ok(args) => args,
                    Err(error) => {
                        println!("{command}: the arguments are not JSON: {error}");
                        continue;
                    }
                };
                let (host, command) = (host.clone(), command.to_owned());
                calls.spawn(async move {
                    match host.invoke(&target, &command, args).await {
                        Ok(value) => println!("{command} -> {value}"),
                        Err(error) => println!("{command} failed [{}]: {error}", error.kind()),
                    }
                });
            }
        }
    }
    // Let the calls in flight finish, then stop everything.
    while calls.join_next().await.is_some() {}
    host.shutdown().await;
    println!("shut down");
    Ok(())
}
