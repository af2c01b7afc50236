//! What a process acting on one bundle learns of the others without loading them: which bundles
//! share its command ids (`command_neighbours`, from `.claims.json` behind the records' stamps)
//! and the look-alike names (`lookalike_warnings`, from the ids alone).

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
    MANIFEST.replace("hello-runtime", name).replace(
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

fn neighbours(store: &Store, id: &str, commands: &[&str]) -> Vec<String> {
    let commands: Vec<String> = commands.iter().map(|c| (*c).to_owned()).collect();
    store.command_neighbours(id, &commands).unwrap()
}

/// The claims of `id` in the parsed `.claims.json`: its entries are `[id, [stamps, taken,
/// claims]]`, in id order.
fn claims_of<'a>(file: &'a mut serde_json::Value, id: &str) -> &'a mut serde_json::Value {
    let entries = file["entries"].as_array_mut().unwrap();
    let entry = entries.iter_mut().find(|entry| entry[0] == id).unwrap();
    &mut entry[1][2]
}

#[test]
fn command_neighbours_follow_shared_commands_and_every_record_change() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::open(&root.path().join("plugins"), StoreOptions::default()).unwrap();
    let a = install(&store, root.path(), "alpha", &["alpha.run", "shared.go"]);
    let b = install(&store, root.path(), "beta", &["beta.run", "alpha.run"]);
    let c = install(&store, root.path(), "gamma", &["gamma.run", "beta.run"]);
    let lone = install(&store, root.path(), "lone", &["lone.run"]);
    // Through beta.run, gamma is reached from alpha's shared.go too; lone never is, and the
    // bundle asking is not its own neighbour.
    assert_eq!(
        neighbours(&store, &a, &["shared.go", "alpha.run"]),
        [b.clone(), c.clone()]
    );
    assert_eq!(
        neighbours(&store, "new", &["shared.go"]),
        [a.clone(), b.clone(), c.clone()]
    );
    assert!(neighbours(&store, &lone, &["lone.run"]).is_empty());
    // Records this young are not written down: a same-size rewrite in the same clock tick
    // would leave their stamps equal.
    let file = store.dir().join(".claims.json");
    assert!(!file.exists());

    std::thread::sleep(SETTLE);
    assert!(neighbours(&fresh(&store), &lone, &["lone.run"]).is_empty());
    assert!(file.exists(), "settled records are written down");
    // A fresh process takes an unchanged record's claims from the file alone: lone's entry
    // given alpha's claims is believed while lone's record keeps its stamps...
    let mut claims: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let alphas = claims_of(&mut claims, &a).as_str().unwrap().to_owned();
    // (Claims that are not 16 hex digits each make the whole file ignored: every record is
    // read again and the file rewritten.)
    let lones = claims_of(&mut claims, &lone).clone();
    *claims_of(&mut claims, &lone) = format!("g{}", &alphas[1..]).into();
    std::fs::write(&file, serde_json::to_vec(&claims).unwrap()).unwrap();
    assert_eq!(
        neighbours(&fresh(&store), "new", &["shared.go"]),
        [a.clone(), b.clone(), c.clone()]
    );
    let mut rewritten: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(*claims_of(&mut rewritten, &lone), lones);
    *claims_of(&mut claims, &lone) = alphas.into();
    std::fs::write(&file, serde_json::to_vec(&claims).unwrap()).unwrap();
    assert_eq!(
        neighbours(&fresh(&store), "new", &["shared.go"]),
        [a.clone(), b.clone(), c.clone(), lone.clone()]
    );
    // ...and the record is read again as soon as they do not: here it is replaced.
    assert_eq!(install(&store, root.path(), "lone", &["lone.run"]), lone);
    assert_eq!(
        neighbours(&fresh(&store), "new", &["shared.go"]),
        [a.clone(), b.clone(), c.clone()]
    );
    // An uninstalled bundle is no one's neighbour; a torn file is ignored, not an error.
    store.uninstall(&b).unwrap();
    std::fs::write(&file, "{\"format\":2,\"entr").unwrap();
    assert_eq!(neighbours(&fresh(&store), "new", &["shared.go"]), [a]);
    assert!(neighbours(&fresh(&store), "new", &["beta.run"]).contains(&c));
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
    assert!(
        store
            .lookalike_warnings(Some("formatter"), &same)
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .lookalike_warnings(None, &elsewhere)
            .unwrap()
            .is_empty()
    );
}
