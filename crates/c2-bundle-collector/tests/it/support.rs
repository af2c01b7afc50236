use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use c2_bundle_collector::{CollectedBundle, Limits, Severity, collect_dir};
use tempfile::TempDir;

pub(crate) const MANIFEST: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "hello-runtime",
  "version": "1.0.0",
  "description": "Says hello.",
  "extensions": {
    "dev.codetwo": {
      "standardVersion": "1.2.0",
      "commands": [{ "id": "hello.run", "title": "Say hello" }],
      "runtime": { "command": "bin/hello", "args": ["--greeting", "lib/greet.txt"] }
    }
  }
}"#;

/// A manifest whose runtime command is `command` (and no args).
pub(crate) fn manifest_with_command(command: &str) -> String {
    MANIFEST
        .replace("bin/hello", command)
        .replace(r#", "args": ["--greeting", "lib/greet.txt"]"#, "")
}

pub(crate) fn write(root: &Path, rel: &str, content: &str) {
    write_bytes(root, rel, content.as_bytes());
}

pub(crate) fn write_bytes(root: &Path, rel: &str, content: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

pub(crate) fn write_exec(root: &Path, rel: &str, content: &str) {
    write(root, rel, content);
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub(crate) fn symlink(root: &Path, rel: &str, target: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// A small valid bundle with a runtime executable, data and a README.
pub(crate) fn hello_bundle() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    fill_hello(dir.path());
    dir
}

pub(crate) fn fill_hello(root: &Path) {
    write(root, "plugin.json", MANIFEST);
    write_exec(root, "bin/hello", "#!/bin/sh\necho hello\n");
    write(root, "lib/greet.txt", "hello\n");
    write(root, "README.md", "# hello\n");
}

pub(crate) fn collect(root: &Path) -> CollectedBundle {
    collect_dir(root, &Limits::default()).unwrap()
}

pub(crate) fn collect_with(root: &Path, limits: Limits) -> CollectedBundle {
    collect_dir(root, &limits).unwrap()
}

/// Small limits so boundary tests stay fast.
pub(crate) fn small_limits() -> Limits {
    Limits {
        max_files: 8,
        max_file_bytes: 1024,
        max_bundle_bytes: 4096,
        max_depth: 4,
        max_entries: 16,
        max_name_bytes: 16,
        max_archive_bytes: 64 * 1024,
    }
}

pub(crate) fn error_codes(bundle: &CollectedBundle) -> Vec<&'static str> {
    bundle
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.code)
        .collect()
}

pub(crate) fn warning_codes(bundle: &CollectedBundle) -> Vec<&'static str> {
    bundle
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| d.code)
        .collect()
}

/// The one error diagnostic with `code`, asserting the bundle is invalid.
pub(crate) fn only_error(bundle: &CollectedBundle, code: &str) -> c2_bundle_collector::Diagnostic {
    assert!(
        !bundle.is_valid(),
        "expected an invalid bundle, got {:#?}",
        bundle.diagnostics
    );
    let errors: Vec<_> = bundle
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "expected exactly one error {code}, got {errors:#?}"
    );
    assert_eq!(errors[0].code, code, "{errors:#?}");
    errors[0].clone()
}

pub(crate) fn assert_valid(bundle: &CollectedBundle) {
    assert!(
        bundle.is_valid(),
        "expected a valid bundle, got {:#?}",
        bundle.diagnostics
    );
}

/// Names in a directory, sorted; hidden entries included.
pub(crate) fn names(dir: &Path) -> Vec<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "tests inspect what the collector wrote"
    )]
    let entries = std::fs::read_dir(dir).unwrap();
    let mut names: Vec<_> = entries
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}
