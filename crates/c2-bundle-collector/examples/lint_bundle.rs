//! A validator-only bundle linter: collects each bundle directory under the default limits
//! (bounded, symlink-safe, nothing executed), validates `plugin.json`, `mcp.json` and every
//! `SKILL.md`, and prints rustc-style diagnostics with the offending source line, then the
//! verdict. Exits 1 when a bundle is invalid, 2 when a directory cannot be read.
//!
//! ```text
//! cargo run -p c2-bundle-collector --example lint_bundle -- packs/hello-runtime
//! # the small build: no archive support (tar, flate2, zip), directories only
//! cargo build --release -p c2-bundle-collector --no-default-features --example lint_bundle
//! ```

#![expect(clippy::print_stdout, reason = "a linter prints its diagnostics")]

use std::path::Path;
use std::process::ExitCode;

use c2_bundle_collector::{CollectOptions, collect_dir};
use c2_manifest::{RenderOptions, render_bundle_diagnostics};

fn main() -> ExitCode {
    let dirs: Vec<String> = std::env::args().skip(1).collect();
    if dirs.is_empty() {
        println!("usage: lint DIR [DIR...]");
        return ExitCode::from(2);
    }
    let options = CollectOptions::default();
    let mut worst = 0u8;
    for dir in &dirs {
        let bundle = match collect_dir(Path::new(dir), &options) {
            Ok(bundle) => bundle,
            Err(error) => {
                println!("{dir}: {error}");
                worst = 2;
                continue;
            }
        };
        let rendered = render_bundle_diagnostics(
            &bundle.diagnostics,
            |file| {
                let entry = bundle.files.get(file)?;
                Some(String::from_utf8_lossy(&entry.bytes))
            },
            &RenderOptions::new(),
        );
        if !rendered.is_empty() {
            println!("{rendered}");
        }
        let warnings = bundle.diagnostics.len() - bundle.error_count();
        let verdict = if bundle.is_valid() {
            "valid"
        } else {
            "invalid"
        };
        println!(
            "{dir}: {verdict} ({} errors, {warnings} warnings)",
            bundle.error_count()
        );
        if !bundle.is_valid() {
            worst = worst.max(1);
        }
    }
    ExitCode::from(worst)
}
