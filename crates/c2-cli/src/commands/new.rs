//! `new <NAME> --lang node|python|rust [--dir PARENT]`: a bundle directory that passes `check`
//! straight away: a valid 1.2.0 manifest with one command `<name>.hello`, a runtime for it in the
//! chosen language, and a README for the author. Nothing else is written, and an existing
//! directory is never touched.
//!
//! The templates live in crates/c2-cli/templates and are embedded. The Node and Python runtimes
//! are written on the plugin SDKs of sdks/typescript and sdks/python, and each bundle carries its
//! SDK as one file beside the runtime (`c2-plugin-sdk.mjs`, `c2_plugin_sdk.py`): installing a
//! bundle executes nothing, so it can run only what it ships. The embedded SDK files are copies
//! of the SDK sources, held identical by a test. The Rust template is a
//! standalone crate on serde_json alone (c2-plugin-sdk is not published, so a crate depending on
//! it would build only inside this repository); its manifest runs `bin/run`, a launcher that
//! execs `target/release/<crate>`, so it must be built with `cargo build --release` before
//! `check`. The collector skips `target/` and caps files at 4 MiB, so an installable Rust bundle
//! ships its binary some other way (the README says how); `check` runs the directory in place.

use std::path::{Path, PathBuf};

use c2_manifest::{ManifestOptions, Severity, validate_manifest};
use serde_json::json;

use crate::CmdResult;
use crate::output::{Failure, Out};

const MANIFEST: &str = include_str!("../../templates/plugin.json.tmpl");
const README: &str = include_str!("../../templates/README.md.tmpl");
const NODE_PLUGIN: &str = include_str!("../../templates/node/plugin.mjs");
/// The TypeScript SDK's single file, which a new bundle carries beside its runtime.
const NODE_SDK: &str = include_str!("../../../../sdks/typescript/src/index.js");
const PYTHON_PLUGIN: &str = include_str!("../../templates/python/plugin.py");
/// The Python SDK's single file, which a new bundle carries beside its runtime.
const PYTHON_SDK: &str = include_str!("../../../../sdks/python/src/c2_plugin_sdk/__init__.py");
const RUST_CARGO: &str = include_str!("../../templates/rust/Cargo.toml.tmpl");
const RUST_MAIN: &str = include_str!("../../templates/rust/main.rs.tmpl");
const RUST_LAUNCHER: &str = include_str!("../../templates/rust/bin/run");

/// The runtime language of a new bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Lang {
    /// plugin.mjs on the JavaScript SDK (carried as c2-plugin-sdk.mjs), run by `node`
    Node,
    /// plugin.py on the Python SDK (carried as c2_plugin_sdk.py), run by `python3`
    Python,
    /// a Cargo crate on serde_json, run through bin/run after `cargo build --release`
    Rust,
}

impl Lang {
    fn as_str(self) -> &'static str {
        match self {
            Lang::Node => "node",
            Lang::Python => "python",
            Lang::Rust => "rust",
        }
    }
}

/// The options of one `new`.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) name: &'a str,
    pub(crate) lang: Lang,
    /// The parent directory [default: the current directory].
    pub(crate) dir: Option<&'a Path>,
}

/// One file to write: bundle-relative path, text, executable bit.
struct NewFile {
    path: &'static str,
    text: String,
    executable: bool,
}

pub(crate) fn run(out: &mut Out, request: &Request<'_>) -> CmdResult {
    let name = request.name;
    let files = render(name, request.lang);
    let manifest = &files[0].text;
    let report = validate_manifest(manifest, &ManifestOptions::default());
    if let Some(problem) = report
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
    {
        let help = problem
            .help
            .as_deref()
            .map_or(String::new(), |h| format!("; {h}"));
        return Err(Failure::environment(
            "invalid_name",
            format!("`{name}` cannot name a bundle: {}{help}", problem.message),
        ));
    }
    let parent = request
        .dir
        .map_or_else(|| PathBuf::from("."), Path::to_owned);
    let target = parent.join(name);
    #[expect(
        clippy::disallowed_methods,
        reason = "`new` creates the bundle directory the user named"
    )]
    let created = std::fs::create_dir(&target);
    if let Err(error) = created {
        return Err(if error.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::operation(
                "already_exists",
                format!(
                    "{} already exists and was left untouched; pick another name, or another parent with --dir",
                    target.display()
                ),
            )
        } else {
            Failure::environment(
                "io",
                format!(
                    "cannot create {}: {error}; check that the parent directory exists and is writable",
                    target.display()
                ),
            )
        });
    }
    if let Err(error) = write_all(&target, &files) {
        // The directory is ours (create_dir just made it): leave nothing half-written behind.
        let _ = std::fs::remove_dir_all(&target);
        return Err(Failure::environment(
            "io",
            format!(
                "cannot write the new bundle in {}: {error}",
                target.display()
            ),
        ));
    }
    let paths: Vec<&str> = files.iter().map(|f| f.path).collect();
    let shown = target.display().to_string();
    let next = match request.lang {
        Lang::Rust => format!("(cd {shown} && cargo build --release) && c2-plugins check {shown}"),
        _ => format!("c2-plugins check {shown}"),
    };
    let human = format!(
        "created {shown} ({} runtime, command {}): {}\nnext: {next}",
        request.lang.as_str(),
        command_id(name),
        paths.join(", ")
    );
    Ok(out.success(
        json!({
            "dir": shown,
            "name": name,
            "lang": request.lang.as_str(),
            "command": command_id(name),
            "files": paths,
            "next": next,
        }),
        &human,
    ))
}

/// The README's note for a bundle on an SDK.
const SDK_NOTES: &str = "\n## The SDK\n\nThe SDK file is a copy of the SDK's single-file source. It checks a plain argsSchema\n(type, properties, required, enum, bounds, allOf/anyOf/oneOf/not) itself; a schema with other\nkeywords (`pattern`, `format`, `$ref`, ...) needs ajv (Node: ship `node_modules/ajv` in the\nbundle) or jsonschema (Python: installed where the plugin runs), and the runtime refuses to\nstart without it, saying so. To update the SDK, copy the newer file over this one.\n";

/// `<name>.hello`, with the dots of a dotted bundle name made dashes so the namespace is one
/// segment.
fn command_id(name: &str) -> String {
    format!("{}.hello", name.replace('.', "-"))
}

/// A Cargo package name for `name`: dots become dashes, and a leading digit gets a prefix.
fn crate_name(name: &str) -> String {
    let dashed = name.replace('.', "-");
    if dashed.starts_with(|c: char| c.is_ascii_digit()) {
        format!("plugin-{dashed}")
    } else {
        dashed
    }
}

/// Every file of the new bundle, plugin.json first.
fn render(name: &str, lang: Lang) -> Vec<NewFile> {
    let command = command_id(name);
    let krate = crate_name(name);
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{command}}", &command)
            .replace("{{crate}}", &krate)
    };
    let file = |path, text: String, executable| NewFile {
        path,
        text,
        executable,
    };
    let (runtime, language, entry, build, files_doc, notes) = match lang {
        Lang::Node => (
            "        \"command\": \"node\",\n        \"args\": [\"plugin.mjs\"],",
            "Node.js",
            "plugin.mjs",
            "",
            "- `plugin.json`: the manifest; `runtime` runs `node plugin.mjs` in this directory (`bun plugin.mjs` works too).\n- `plugin.mjs`: the runtime, one handler per command.\n- `c2-plugin-sdk.mjs`: the C2 plugin SDK for JavaScript/TypeScript, carried in the bundle\n  because installing a bundle runs nothing (no `npm install`).",
            SDK_NOTES,
        ),
        Lang::Python => (
            "        \"command\": \"python3\",\n        \"args\": [\"-B\", \"-u\", \"plugin.py\"],",
            "Python",
            "plugin.py",
            "",
            "- `plugin.json`: the manifest; `runtime` runs `python3 -B -u plugin.py` in this directory\n  (`-B`: no `__pycache__` written into the bundle, whose files are what the user trusted).\n- `plugin.py`: the runtime, one handler per command.\n- `c2_plugin_sdk.py`: the C2 plugin SDK for Python, carried in the bundle because installing\n  a bundle runs nothing (no `pip install`).",
            SDK_NOTES,
        ),
        Lang::Rust => (
            "        \"command\": \"bin/run\",",
            "Rust",
            "src/main.rs (one match arm per command)",
            "cargo build --release                                 # the runtime must be built first\n",
            "- `plugin.json`: the manifest; `runtime` runs `bin/run` in this directory.\n- `bin/run`: a launcher that execs `target/release/{{crate}}`.\n- `Cargo.toml`, `src/main.rs`: the runtime, a standalone crate whose only dependency is\n  serde_json.",
            "\n## Shipping a Rust bundle\n\n`check` and `run` use this directory in place, so the built `target/release/{{crate}}` is\nthere. An installed bundle is a copy made by the bundle collector, which skips `target/` and\nrefuses files over 4 MiB: to distribute the plugin, build a release binary small enough (the\n`strip = true` release profile helps), copy it to `bin/`, point `runtime.command` at it, and\ndrop the launcher.\n",
        ),
    };
    let readme = README
        .replace("{{language}}", language)
        .replace("{{entry}}", entry)
        .replace("{{build}}", build)
        .replace("{{files}}", files_doc)
        .replace("{{notes}}", notes);
    let mut files = vec![file(
        "plugin.json",
        fill(&MANIFEST.replace("{{runtime}}", runtime)),
        false,
    )];
    match lang {
        // The SDK files are copied as they are, never filled.
        Lang::Node => {
            files.push(file("plugin.mjs", fill(NODE_PLUGIN), true));
            files.push(file("c2-plugin-sdk.mjs", NODE_SDK.to_owned(), false));
        }
        Lang::Python => {
            files.push(file("plugin.py", fill(PYTHON_PLUGIN), true));
            files.push(file("c2_plugin_sdk.py", PYTHON_SDK.to_owned(), false));
        }
        Lang::Rust => {
            files.push(file("Cargo.toml", fill(RUST_CARGO), false));
            files.push(file("src/main.rs", fill(RUST_MAIN), false));
            files.push(file("bin/run", fill(RUST_LAUNCHER), true));
        }
    }
    files.push(file("README.md", fill(&readme), false));
    files
}

#[expect(
    clippy::disallowed_methods,
    reason = "`new` writes its templates into the bundle directory it just created"
)]
fn write_all(dir: &Path, files: &[NewFile]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for file in files {
        let path = dir.join(file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &file.text)?;
        if file.executable {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_renders_a_valid_manifest_with_no_placeholder_left() {
        for lang in [Lang::Node, Lang::Python, Lang::Rust] {
            let files = render("my.tool", lang);
            let report = validate_manifest(&files[0].text, &ManifestOptions::default());
            assert!(report.is_valid(), "{lang:?}: {:#?}", report.diagnostics);
            let manifest = report.manifest.unwrap();
            assert_eq!(manifest.codetwo.commands[0].id, "my-tool.hello");
            for file in &files {
                assert!(!file.text.contains("{{"), "{lang:?} {}", file.path);
            }
        }
    }

    #[test]
    fn a_crate_name_never_starts_with_a_digit() {
        assert_eq!(crate_name("3d.view"), "plugin-3d-view");
        assert_eq!(crate_name("demo"), "demo");
    }
}
