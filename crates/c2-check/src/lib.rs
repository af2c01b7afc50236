//! The author's runtime check (`check`): one bundle directory's runtime exercised the way the
//! host would run it, with a pass/fail verdict per check and, for every failure, what the author
//! should fix.
//!
//! The check spawns the runtime exactly as activation does (bundle directory as cwd, the
//! manifest's `env` over the host's, its own process group through c2-supervisor, a fresh
//! `dataDir`) and runs c2-protocol's handshake steps against it, but as a stand-in host:
//! `host.commands` is `["git.status"]`, `config` is `null`, there is no `projectPath`, and every
//! `command/call` from the plugin is answered with an error saying it is not available during a
//! check. Nothing is installed, trusted or stored: it never touches a plugin host or a store.
//! It depends on c2-manifest, c2-bundle-collector, c2-protocol and c2-supervisor only; the CLI
//! depends on it.

mod error;
mod hints;
mod observe;
mod options;
mod plan;
mod report;
mod session;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use error::Error;
pub use options::CheckOptions;
pub use plan::EXAMPLES_FILE;
pub use report::{CheckItem, CheckReport};

use plan::{plan_invocations, validated};
use session::{DataDir, Session};

/// Checks the bundle directory `dir`: validates it, runs its runtime against a stand-in host
/// and reports every verdict. `Err` only when `dir` cannot be read at all or the data directory
/// cannot be made; everything the bundle does wrong is a failed [`CheckItem`].
pub async fn check_bundle(dir: &Path, options: &CheckOptions) -> Result<CheckReport, Error> {
    let mut report = CheckReport::default();
    // The runtime is resolved here and spawned in `dir`: a relative path would resolve twice.
    let dir = &std::path::absolute(dir).map_err(|source| Error::Io {
        action: "resolve the bundle directory",
        path: dir.to_owned(),
        source,
    })?;
    let bundle = c2_bundle_collector::collect_dir(dir, &options.limits)?;
    let Some(manifest) = validated(&bundle, &mut report) else {
        return Ok(report.finish());
    };
    let Some(runtime) = manifest.codetwo.runtime.as_ref() else {
        report.fail(
            "runtime",
            format!(
                "plugin.json declares no extensions.dev.codetwo.runtime, so there is no process to check; add one, or use {} for a bundle without a runtime",
                hints::VALIDATE
            ),
        );
        return Ok(report.finish());
    };
    let plan = plan_invocations(&bundle, manifest, &mut report);
    let data_dir = DataDir::create(options.data_dir.as_deref())?;
    let session = Session {
        dir,
        manifest,
        runtime,
        options,
        data_dir: &data_dir.path,
    };
    session.run(&plan, &mut report).await;
    data_dir.remove();
    Ok(report.finish())
}

// The README example is compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
