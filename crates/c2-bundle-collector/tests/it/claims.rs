//! What a process acting on one bundle learns of the others without loading them: the command
//! ids each declares (`command_claims`, cached in `claims.json` behind the records' stamps) and
//! the look-alike names (`lookalike_warnings`, from the ids alone).

use std::path::Path;
use std::time::Duration;

use c2_bundle_collector::{InstallRequest, SourceIdentity, Store, StoreOptions, installed_name};

use crate::support::*;

/// What the store's settle rule needs before a record's stamps vouch for it (2 s), with margin.
const SETTLE: Duration = Duration::from_millis(2_300);

fn manifest(name: &str, commands: &[&str]) -> String {
    let commands: Vec<String> = commands
        .iter()
        .map(|id| format!(r#"{{ "id": "{id}", "title": "Run {id}" }}"#))
        .collect();
    MANIFEST
        .replace("hello-runtime", name)
        .replace(
            r#"[{ "id": "hello.run", "title": "Say hello" }]"#,
            &format!("[{}]", commands.join(", ")),
        )
}

/// Installs a bundle named `name` declaring `commands`, from its own source under `root`.
fn install(store: &Store, root: &Path, name: &str, commands: &[&str]) -> String {
    let source = root.join(name);
    fill_hello(&source);
    write(&source, "plugin.json", &manifest(name, commands));
    let bundle = collect(&source);
    assert_valid(&bundle);
    let request = InstallRequest::new(SourceIdentity::local(&source).unwrap());
    store.install(&bundle, &request).unwrap().id
}

fn fresh(store: &Store) -> Store {
    Store::open(store.dir(), StoreOptions::default()).unwrap()
}

#[test]
fn command_claims_name_each_bundles_commands_and_follow_every_record_change() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::open(&root.path().join("plugins"), StoreOptions::default()).unwrap();
    let a = install(&store, root.path(), "alpha", &["alpha.run", "shared.go"]);
    let b = install(&store, root.path(), "beta", &["beta.run"]);
    let claims = store.command_claims().unwrap();
    assert_eq!(claims[&a], ["alpha.run", "shared.go"]);
    assert_eq!(claims[&b], ["beta.run"]);
    // Records this young are not written down: a same-size rewrite in the same clock tick
    // would leave their stamps equal.
    assert!(!store.dir().join("claims.json").exists());

    std::thread::sleep(SETTLE);
    assert_eq!(fresh(&store).command_claims().unwrap(), claims);
    let file = store.dir().join("claims.json");
    assert!(file.exists(), "settled records are written down");
    // A fresh process takes an unchanged record's claims from the file alone: a planted
    // claim is believed while the record's stamps match...
    let planted = std::fs::read_to_string(&file)
        .unwrap()
        .replace("beta.run", "planted.claim");
    std::fs::write(&file, planted).unwrap();
    assert_eq!(fresh(&store).command_claims().unwrap()[&b], ["planted.claim"]);
    // ...and the record is read again as soon as they do not: here it is replaced.
    let b_again = install(&store, root.path(), "beta", &["beta.run", "beta.more"]);
    assert_eq!(b_again, b);
    let claims = fresh(&store).command_claims().unwrap();
    assert_eq!(claims[&b], ["beta.run", "beta.more"]);
    // An uninstalled bundle has no claims; a torn file is ignored, not an error.
    store.uninstall(&a).unwrap();
    std::fs::write(&file, "{\"format\":1,\"entr").unwrap();
    let claims = fresh(&store).command_claims().unwrap();
    assert!(!claims.contains_key(&a));
    assert_eq!(claims.len(), 1);
}

#[test]
fn look_alike_names_are_found_from_the_ids_and_confirmed_from_the_records() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::open(&root.path().join("plugins"), StoreOptions::default()).unwrap();
    let installed = install(&store, root.path(), "formatter", &["fmt.run"]);
    install(&store, root.path(), "unrelated", &["other.run"]);
    assert_eq!(installed_name(&installed), Some("formatter"));
    assert_eq!(installed_name("no-hash"), None);
    assert_eq!(installed_name("-0123abcd"), None);
    assert_eq!(installed_name("x-0123ABCD"), None);

    let elsewhere = SourceIdentity::local(root.path()).unwrap();
    let warnings = store
        .lookalike_warnings(Some("formater"), &elsewhere)
        .unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains(&installed), "{warnings:?}");
    // The same source is the same bundle, not a look-alike; no name, no check.
    let same = store.get(&installed).unwrap().source;
    assert!(store.lookalike_warnings(Some("formatter"), &same).unwrap().is_empty());
    assert!(store.lookalike_warnings(None, &elsewhere).unwrap().is_empty());
}
