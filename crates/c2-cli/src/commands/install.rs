//! `install <SOURCE>`: collect a directory or archive, refuse it unless valid, store it
//! atomically and print its id. Nothing from the bundle runs.
//!
//! For now this talks to the store directly; the host will take over (policy, trust and
//! running processes), which is why it lives alone in this module.

use std::path::Path;

use c2_bundle_collector::{InstallRequest, Limits, SourceIdentity, Store, StoreOptions};
use serde_json::json;

use crate::CmdResult;
use crate::commands::{plugins_dir, store_failure};
use crate::output::{Failure, Out};
use crate::report::{self, Paint};

/// Source prefixes that need fetching, which the host will do; this build cannot yet.
const REMOTE_PREFIXES: [&str; 5] = ["git+", "https://", "http://", "ssh://", "git@"];

#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) source: &'a Path,
    pub(crate) plugins_dir: Option<&'a Path>,
    pub(crate) trust: bool,
    pub(crate) enable: bool,
}

pub(crate) fn run(out: &mut Out, request: &Request<'_>) -> CmdResult {
    if request.trust || request.enable {
        let flag = if request.trust { "--trust" } else { "--enable" };
        return Err(Failure::environment(
            "unsupported",
            format!(
                "{flag} is not supported yet by this build: trust and enablement arrive with the host; install without it"
            ),
        ));
    }
    let source = request.source;
    let text = source.to_string_lossy();
    if REMOTE_PREFIXES.iter().any(|p| text.starts_with(p)) {
        return Err(Failure::environment(
            "unsupported_source",
            format!(
                "{text}: git and GitHub sources are not supported yet by this build; clone it and install the bundle directory"
            ),
        ));
    }
    let dir = plugins_dir(request.plugins_dir)?;

    let bundle = c2_bundle_collector::collect(source, &Limits::default()).map_err(store_failure)?;
    let paint = Paint {
        color: out.stderr_color(),
    };
    let rendered = report::render_diagnostics(
        &bundle.diagnostics,
        |file| {
            bundle
                .files
                .get(file)
                .map(|entry| String::from_utf8_lossy(&entry.bytes))
        },
        paint,
    );
    if !bundle.is_valid() {
        if !out.json() {
            out.note(&rendered);
        }
        return Err(Failure::operation(
            "invalid_bundle",
            format!(
                "{} is not a valid bundle ({}); nothing was installed: fix the diagnostics above and install again",
                source.display(),
                report::counts(&bundle.diagnostics)
            ),
        )
        .with_detail(
            "diagnostics",
            report::diagnostics_json(&bundle.diagnostics),
        ));
    }
    if !rendered.is_empty() && !out.json() {
        // Warnings do not stop an install, but the author should still see them.
        out.note(&rendered);
    }

    let identity = match &bundle.archive_digest {
        Some(digest) => SourceIdentity::Archive {
            digest: digest.clone(),
        },
        None => SourceIdentity::local(source).map_err(store_failure)?,
    };
    let store = Store::open(&dir, StoreOptions::default()).map_err(store_failure)?;
    let record = store
        .install(&bundle, &InstallRequest::new(identity))
        .map_err(store_failure)?;

    let ships_runtime = bundle
        .manifest
        .as_ref()
        .is_some_and(|m| m.codetwo.runtime.is_some());
    if ships_runtime {
        out.note(&format!(
            "warning: {} ships a runtime; it will not run until you trust it: c2-plugins trust {}",
            record.name, record.id
        ));
    }
    if !out.json() {
        out.note(&format!(
            "installed {} {} from {} into {}",
            record.name,
            record.version,
            source.display(),
            dir.display()
        ));
    }
    Ok(out.success(
        json!({
            "id": record.id,
            "name": record.name,
            "version": record.version,
            "digest": record.digest,
            "source": record.source,
            "runtime": ships_runtime,
            "trusted": false,
            "contributions": report::contributions_json(&record.inventory),
            "unsupported": report::unsupported_json(&record.inventory),
        }),
        &record.id,
    ))
}
