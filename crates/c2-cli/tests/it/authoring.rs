//! `new` and `check`, the authoring commands: a new bundle passes `check` straight away, the
//! packs pass, and `check` reports failures with exit codes CI can rely on.

use serde_json::{Value, json};

use crate::{Sandbox, pack};

fn names_of_failed(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] == json!(false))
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_new_node_or_python_bundle_passes_check_straight_away() {
    let sandbox = Sandbox::new();
    for lang in ["node", "python"] {
        let name = format!("demo-{lang}");
        let created = sandbox.run(&["new", &name, "--lang", lang]);
        assert_eq!(created.code, 0, "{created:#?}");
        let checked = sandbox.run(&["check", &name, "--format", "json"]);
        assert_eq!(checked.code, 0, "{lang}: {checked:#?}");
        let report = checked.json();
        assert_eq!(report["ok"], json!(true), "{report:#}");
        let invoke = format!("invoke demo-{lang}.hello");
        let hello = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == json!(invoke))
            .unwrap_or_else(|| panic!("no {invoke} in {report:#}"));
        assert!(
            hello["detail"].as_str().unwrap().contains("Hello, world!"),
            "{hello:#}"
        );
    }
}

#[test]
fn new_writes_the_manifest_the_runtime_and_a_readme_and_nothing_else() {
    let sandbox = Sandbox::new();
    let parent = sandbox.work.join("bundles");
    std::fs::create_dir(&parent).unwrap();
    let created = sandbox.run(&[
        "new",
        "my.tool",
        "--lang",
        "python",
        "--dir",
        parent.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(created.code, 0, "{created:#?}");
    let result = &created.json()["result"];
    assert_eq!(result["command"], json!("my-tool.hello"));
    assert_eq!(
        result["files"],
        json!(["plugin.json", "plugin.py", "c2_plugin_sdk.py", "README.md"])
    );
    for file in ["plugin.json", "plugin.py", "c2_plugin_sdk.py", "README.md"] {
        assert!(parent.join("my.tool").join(file).is_file(), "{file}");
    }
    let validated = sandbox.run(&["validate", parent.join("my.tool").to_str().unwrap()]);
    assert_eq!(validated.code, 0, "{validated:#?}");
}

#[test]
fn new_refuses_an_existing_directory_and_leaves_it_untouched() {
    let sandbox = Sandbox::new();
    sandbox.write("taken/keep.txt", "mine");
    let refused = sandbox.run(&["new", "taken", "--lang", "node"]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(refused.stderr.contains("already exists"), "{refused:#?}");
    assert!(!sandbox.work.join("taken/plugin.json").exists());
    assert_eq!(
        std::fs::read_to_string(sandbox.work.join("taken/keep.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn new_refuses_a_name_that_cannot_name_a_bundle() {
    let sandbox = Sandbox::new();
    let refused = sandbox.run(&["new", "Bad Name", "--lang", "node"]);
    assert_eq!(refused.code, 2, "{refused:#?}");
    assert!(
        refused.stderr.contains("cannot name a bundle"),
        "{refused:#?}"
    );
    assert!(!sandbox.work.join("Bad Name").exists());
}

#[test]
fn check_passes_the_node_and_python_packs_with_a_line_per_check() {
    let sandbox = Sandbox::new();
    for name in ["hello-runtime", "hello-python"] {
        let checked = sandbox.run(&["check", pack(name).to_str().unwrap()]);
        assert_eq!(checked.code, 0, "{name}: {checked:#?}");
        assert!(checked.stdout.contains("PASS  handshake: "), "{checked:#?}");
        assert!(
            checked.stdout.contains("PASS  exit on stdin EOF: "),
            "{checked:#?}"
        );
        assert!(
            checked.stdout.contains("check passed: all "),
            "{checked:#?}"
        );
    }
}

#[test]
fn check_fails_with_exit_1_and_says_what_to_fix_for_a_banner() {
    let sandbox = Sandbox::new();
    let created = sandbox.run(&["new", "noisy", "--lang", "python"]);
    assert_eq!(created.code, 0, "{created:#?}");
    // A classic mistake: a bare print() at start-up.
    let script = sandbox.work.join("noisy/plugin.py");
    let text = std::fs::read_to_string(&script).unwrap();
    let text = text.replace(
        "def main():\n",
        "def main():\n    print(\"Starting up...\")\n",
    );
    std::fs::write(&script, text).unwrap();
    let checked = sandbox.run(&["check", "noisy", "--format", "json"]);
    assert_eq!(checked.code, 1, "{checked:#?}");
    let report = checked.json();
    assert_eq!(report["ok"], json!(false));
    assert_eq!(names_of_failed(&report), ["stdout"], "{report:#}");
    let human = sandbox.run(&["check", "noisy"]);
    assert_eq!(human.code, 1);
    assert!(
        human
            .stdout
            .contains("FAIL  stdout: stdout carried 1 non-protocol line(s): `Starting up...`"),
        "{human:#?}"
    );
    assert!(
        human
            .stdout
            .contains("write logs to stderr or use the log notification"),
        "{human:#?}"
    );
    assert!(human.stdout.contains("check failed: 1 of "), "{human:#?}");
}

#[test]
fn check_of_an_unreadable_path_exits_2() {
    let sandbox = Sandbox::new();
    let checked = sandbox.run(&["check", "nowhere", "--format", "json"]);
    assert_eq!(checked.code, 2, "{checked:#?}");
    assert_eq!(checked.json()["ok"], json!(false));
}

#[test]
fn an_unbuilt_rust_bundle_spawns_its_relative_launcher_and_fails_the_handshake() {
    // A cold release build of the generated crate (serde_json) takes longer than this suite
    // may, so this covers everything up to the build: the launcher resolves and runs, and says
    // what to do.
    let sandbox = Sandbox::new();
    let created = sandbox.run(&["new", "rusty", "--lang", "rust"]);
    assert_eq!(created.code, 0, "{created:#?}");
    assert!(
        created.stdout.contains("cargo build --release"),
        "{created:#?}"
    );
    let checked = sandbox.run(&["check", "rusty", "--format", "json"]);
    assert_eq!(checked.code, 1, "{checked:#?}");
    let report = checked.json();
    let failed = names_of_failed(&report);
    assert!(failed.contains(&"handshake".to_owned()), "{report:#}");
    assert!(!failed.contains(&"spawn".to_owned()), "{report:#}");
}

#[test]
fn a_new_rust_bundle_passes_check_once_built_as_its_readme_says() {
    let sandbox = Sandbox::new();
    let created = sandbox.run(&["new", "rusty", "--lang", "rust"]);
    assert_eq!(created.code, 0, "{created:#?}");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    #[expect(
        clippy::disallowed_methods,
        reason = "the test builds the generated crate as its author would"
    )]
    let built = std::process::Command::new(cargo)
        .args(["build", "--release", "--quiet"])
        .current_dir(sandbox.work.join("rusty"))
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let checked = sandbox.run(&["check", "rusty", "--format", "json"]);
    assert_eq!(checked.code, 0, "{checked:#?}");
    assert_eq!(checked.json()["ok"], json!(true));
}
