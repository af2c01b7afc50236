//! Agent Plugins §9 path resolution for stdio MCP servers, and the bounded reads of an
//! installed bundle's files.

use std::collections::BTreeMap;
use std::path::Path;

use c2_bundle_collector::{
    DataDirs, McpPathError, McpStdioEntry, ResolvedStdio, ensure_data_dir, expand_plugin_paths,
    read_installed_file, resolve_mcp_stdio,
};

use crate::support::*;

fn resolve(
    root: &Path,
    data: &Path,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&str>,
    dirs: DataDirs,
) -> Result<ResolvedStdio, McpPathError> {
    let entry = McpStdioEntry {
        command,
        args,
        env,
        cwd,
    };
    resolve_mcp_stdio(root, data, entry, None, dirs)
}

#[test]
fn placeholders_are_expanded_once_and_never_rescanned() {
    assert_eq!(
        expand_plugin_paths("${PLUGIN_ROOT}/a:${PLUGIN_DATA}", "/r${PLUGIN_DATA}", "/d"),
        "/r${PLUGIN_DATA}/a:/d"
    );
    assert_eq!(
        expand_plugin_paths("$PLUGIN_ROOT ${PLUGIN_ROOT ${x}", "/r", "/d"),
        "$PLUGIN_ROOT ${PLUGIN_ROOT ${x}"
    );
}

#[test]
fn a_launch_resolution_creates_plugin_data_and_its_working_folder_and_overlays_env() {
    let bundle = tempfile::tempdir().unwrap();
    write_exec(bundle.path(), "bin/server", "#!/bin/sh\n");
    let store = tempfile::tempdir().unwrap();
    let data = store.path().join(".data/x/mcp");
    let env = BTreeMap::from([("WHERE".to_owned(), "${PLUGIN_DATA}/db".to_owned())]);
    let args = vec!["--root=${PLUGIN_ROOT}".to_owned()];
    let got = resolve(
        bundle.path(),
        &data,
        "./bin/server",
        &args,
        &env,
        Some("${PLUGIN_DATA}/work"),
        DataDirs::Create,
    )
    .unwrap();
    let root = std::fs::canonicalize(bundle.path()).unwrap();
    let data = std::fs::canonicalize(&data).unwrap();
    assert_eq!(got.program, root.join("bin/server"));
    assert_eq!(got.cwd, data.join("work"));
    assert!(got.cwd.is_dir());
    let root_text = root.to_str().unwrap().to_owned();
    let data_text = data.to_str().unwrap().to_owned();
    assert_eq!(got.args, [format!("--root={root_text}")]);
    assert_eq!(
        got.env,
        [
            ("WHERE".to_owned(), format!("{data_text}/db")),
            ("PLUGIN_ROOT".to_owned(), root_text),
            ("PLUGIN_DATA".to_owned(), data_text),
        ]
    );
}

#[test]
fn a_listing_resolution_creates_nothing_and_resolves_the_same_paths() {
    let bundle = tempfile::tempdir().unwrap();
    write_exec(bundle.path(), "bin/server", "#!/bin/sh\n");
    let store = tempfile::tempdir().unwrap();
    let data = store.path().join(".data/x/mcp");
    let cwd = Some("${PLUGIN_DATA}/work");
    let listed = resolve(
        bundle.path(),
        &data,
        "./bin/server",
        &[],
        &BTreeMap::new(),
        cwd,
        DataDirs::Leave,
    )
    .unwrap();
    assert!(!store.path().join(".data").exists());
    let launched = resolve(
        bundle.path(),
        &data,
        "./bin/server",
        &[],
        &BTreeMap::new(),
        cwd,
        DataDirs::Create,
    )
    .unwrap();
    assert_eq!(listed, launched);
}

#[test]
fn a_cwd_that_leaves_the_root_through_a_link_is_refused_after_resolving_it() {
    let bundle = tempfile::tempdir().unwrap();
    write_exec(bundle.path(), "bin/server", "#!/bin/sh\n");
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), bundle.path().join("away")).unwrap();
    let store = tempfile::tempdir().unwrap();
    let error = resolve(
        bundle.path(),
        &store.path().join("mcp"),
        "./bin/server",
        &[],
        &BTreeMap::new(),
        Some("./away"),
        DataDirs::Create,
    )
    .unwrap_err();
    assert!(
        matches!(error, McpPathError::Outside { what: "cwd", .. }),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("cwd "), "{error}");
    assert!(error.to_string().contains(", outside "), "{error}");
}

#[test]
fn commands_that_cannot_run_are_refused_with_the_reason() {
    let bundle = tempfile::tempdir().unwrap();
    write(bundle.path(), "bin/plain", "not executable");
    let data = tempfile::tempdir().unwrap();
    let refuse = |command: &str| {
        resolve(
            bundle.path(),
            data.path(),
            command,
            &[],
            &BTreeMap::new(),
            None,
            DataDirs::Create,
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        refuse("./bin/plain"),
        "command ./bin/plain is not an executable file (chmod +x it)"
    );
    assert_eq!(
        refuse("no-such-tool"),
        "command `no-such-tool` is not found on PATH"
    );
}

#[test]
fn installed_files_are_read_bounded_and_never_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "plugin.json", "{}");
    assert_eq!(
        read_installed_file(dir.path(), "plugin.json", 2).unwrap(),
        "{}"
    );
    let big = read_installed_file(dir.path(), "plugin.json", 1).unwrap_err();
    assert_eq!(big.kind(), std::io::ErrorKind::InvalidData);
    let missing = read_installed_file(dir.path(), "mcp.json", 10).unwrap_err();
    assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    symlink(dir.path(), "linked.json", "plugin.json");
    let linked = read_installed_file(dir.path(), "linked.json", 10).unwrap_err();
    assert_eq!(linked.kind(), std::io::ErrorKind::InvalidData);
}

#[test]
fn data_directories_are_made_with_their_parents_and_may_exist() {
    let store = tempfile::tempdir().unwrap();
    let data = store.path().join(".data/x/project");
    ensure_data_dir(&data).unwrap();
    ensure_data_dir(&data).unwrap();
    assert!(data.is_dir());
}
