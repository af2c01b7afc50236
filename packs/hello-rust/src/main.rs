//! hello-rust: the example C2 plugin runtime in Rust. It declares its commands in `plugin.json`
//! and binds one typed handler to each through c2-plugin-sdk, which does the protocol: the
//! handshake, args validation, `command/call` to the host, `log`, and exiting when stdin closes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use c2_plugin_sdk::{CommandError, Context, Error, Plugin};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// `hello-rust.greet` args; the manifest's argsSchema has already checked them.
#[derive(Debug, Deserialize)]
struct GreetArgs {
    name: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Greeting {
    greeting: String,
    greetings_so_far: u64,
}

/// `hello-rust.status` args.
#[derive(Debug, Deserialize)]
struct StatusArgs {
    cwd: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    branch: Option<String>,
    changed_files: usize,
}

fn main() -> Result<(), Error> {
    let greetings = Arc::new(AtomicU64::new(0));
    Plugin::from_manifest()?
        .command("hello-rust.greet", move |_ctx: Context, args: GreetArgs| {
            greet(args, Arc::clone(&greetings))
        })
        .command("hello-rust.status", status)
        .on_event("skills/changed", |_ctx, _payload| async {
            tracing::info!("the host rebuilt its skill library");
        })
        .run()
}

async fn greet(args: GreetArgs, greetings: Arc<AtomicU64>) -> Result<Greeting, CommandError> {
    let name = args.name.unwrap_or_else(|| "world".to_owned());
    let greetings_so_far = greetings.fetch_add(1, Ordering::Relaxed) + 1;
    // A stray print cannot corrupt the protocol: the SDK moved the protocol off fd 1 and
    // pointed fd 1 at stderr before any handler ran, so this line lands in the host's log.
    #[expect(
        clippy::print_stdout,
        reason = "shows that a println! in a handler is harmless under the SDK"
    )]
    let () = println!("hello-rust greeted {name}");
    tracing::info!(name = %name, "greeted");
    Ok(Greeting {
        greeting: format!("Hello, {name}!"),
        greetings_so_far,
    })
}

async fn status(ctx: Context, args: StatusArgs) -> Result<Status, CommandError> {
    // Feature-detect: a host (or realm) that does not publish git.status gets a clear answer.
    if !ctx.has_host_command("git.status") {
        return Err(CommandError::new(
            "this host does not offer git.status to plugins, so there is no status to report",
        ));
    }
    // Without `cwd`, ask about "." : the host resolves it in the caller's realm (the project
    // of a project instance, the host's working directory for the user instance).
    let cwd = match (args.cwd, ctx.project_path()) {
        (Some(cwd), _) => cwd,
        (None, Some(project)) => project.display().to_string(),
        (None, None) => ".".to_owned(),
    };
    let answer = ctx.call("git.status", json!({ "cwd": cwd })).await?;
    Ok(Status {
        branch: answer["branch"].as_str().map(str::to_owned),
        changed_files: answer["files"].as_array().map_or(0, Vec::len),
    })
}
