//! `bisect` end to end: a real store of twelve bundles, the real binary for every step, the
//! problem judged from what `list` says is enabled.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::Sandbox;

/// Installs, trusts and enables twelve bundles `b00`..`b11`; returns their ids in order.
fn twelve(sandbox: &Sandbox) -> Vec<String> {
    bundles(sandbox, "b", "")
}

/// Twelve bundles `<prefix>00`.. with `extra` members in their `dev.codetwo` object (`NAME`
/// replaced by the bundle's name).
fn bundles(sandbox: &Sandbox, prefix: &str, extra: &str) -> Vec<String> {
    (0..12)
        .map(|i| {
            let name = format!("{prefix}{i:02}");
            let extra = extra.replace("NAME", &name);
            let dir = sandbox.write(
                &format!("{name}/plugin.json"),
                &format!(
                    r#"{{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "{name}", "version": "1.0.0", "extensions": {{"dev.codetwo": {{"standardVersion": "1.2.0"{extra}}}}}}}"#
                ),
            );
            let install = sandbox.run(&[
                "install",
                dir.parent().unwrap().to_str().unwrap(),
                "--trust",
                "--enable",
            ]);
            assert_eq!(install.code, 0, "{install:#?}");
            install.stdout.trim().to_owned()
        })
        .collect()
}

fn enabled(sandbox: &Sandbox) -> BTreeSet<String> {
    let listed = sandbox.run(&["list", "--format", "json"]).json();
    listed["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["enabled"] == Value::Bool(true))
        .map(|row| row["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The policy document without its revision, which grows with every write.
fn policy(sandbox: &Sandbox) -> Value {
    let text = std::fs::read_to_string(sandbox.plugins.join("policy.json")).unwrap();
    let mut document: Value = serde_json::from_str(&text).unwrap();
    document.as_object_mut().unwrap().remove("revision");
    document
}

/// Judges steps until the search ends, the problem showing when every bundle of `culprits`
/// is enabled; returns the last report and the number of verdicts (halving, all).
fn judge(sandbox: &Sandbox, culprits: &[&String]) -> (Value, usize, usize) {
    let (mut verdicts, mut halving) = (0, 0);
    loop {
        let status = sandbox
            .run(&["bisect", "status", "--format", "json"])
            .json();
        let result = &status["result"];
        if !result["outcome"].is_null() {
            return (result.clone(), halving, verdicts);
        }
        if !result["confirming"].as_bool().unwrap() && result["suspect"].is_null() {
            halving += 1;
        }
        let on = enabled(sandbox);
        let bad = culprits.iter().all(|id| on.contains(*id));
        let verdict = sandbox.run(&["bisect", if bad { "bad" } else { "good" }]);
        assert_eq!(verdict.code, 0, "{verdict:#?}");
        verdicts += 1;
        assert!(verdicts <= 12, "the search must end");
    }
}

#[test]
fn bisect_finds_a_planted_culprit_among_twelve_and_reset_restores_the_policy() {
    let sandbox = Sandbox::new();
    let ids = twelve(&sandbox);
    let before = policy(&sandbox);
    let start = sandbox.run(&["bisect", "start"]);
    assert_eq!(start.code, 0, "{start:#?}");
    assert!(start.stdout.contains("over 12 bundle(s)"), "{start:#?}");
    assert_eq!(enabled(&sandbox).len(), 6, "the first step halves");
    let culprit = &ids[9];
    let (result, halving, verdicts) = judge(&sandbox, &[culprit]);
    assert_eq!(result["outcome"]["kind"], "culprit", "{result}");
    assert_eq!(result["outcome"]["id"], culprit.as_str(), "{result}");
    assert!(
        halving <= 4,
        "isolated in ceil(log2 12) = 4 steps, took {halving}"
    );
    assert!(verdicts <= 5, "confirmed in one more, took {verdicts}");
    let human = sandbox.run(&["bisect", "status"]);
    assert!(
        human.stdout.contains(&format!("culprit: {culprit}")),
        "{human:#?}"
    );
    let reset = sandbox.run(&["bisect", "reset"]);
    assert_eq!(reset.code, 0, "{reset:#?}");
    assert!(
        reset
            .stdout
            .contains("restored the enablement of policy revision"),
        "{reset:#?}"
    );
    assert_eq!(policy(&sandbox), before);
    assert_eq!(enabled(&sandbox).len(), 12);
    assert!(!sandbox.plugins.join("policy.bisect.json").exists());
}

#[test]
fn bisect_names_a_pair_that_only_fails_together_and_reset_leaves_others_changes() {
    let sandbox = Sandbox::new();
    let ids = twelve(&sandbox);
    let keep = ids[0].clone();
    let start = sandbox.run(&["bisect", "start", "--keep", &keep]);
    assert_eq!(start.code, 0, "{start:#?}");
    assert!(start.stdout.contains("over 11 bundle(s)"), "{start:#?}");
    let (result, _, verdicts) = judge(&sandbox, &[&ids[3], &ids[10]]);
    assert_eq!(result["outcome"]["kind"], "pair", "{result}");
    assert_eq!(
        result["outcome"]["ids"],
        serde_json::json!([ids[3], ids[10]]),
        "{result}"
    );
    assert!(verdicts <= 2 * 4 + 2, "{verdicts} verdicts");
    // Someone re-enables one bundle bisect disabled and disables the kept one meanwhile.
    let disabled: Vec<String> = result["disabledByBisect"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect();
    let theirs = &disabled[0];
    assert_eq!(sandbox.run(&["enable", theirs]).code, 0);
    assert_eq!(sandbox.run(&["disable", &keep]).code, 0);
    let reset = sandbox.run(&["bisect", "reset"]);
    assert_eq!(reset.code, 0, "{reset:#?}");
    assert!(
        reset.stdout.contains("restored only what bisect changed"),
        "{reset:#?}"
    );
    let on = enabled(&sandbox);
    assert!(
        !on.contains(&keep),
        "bisect never re-enables what it did not disable"
    );
    assert_eq!(on.len(), 11);
}

#[test]
fn a_project_bisect_disables_in_that_project_only_and_reset_gives_back_inheritance() {
    let sandbox = Sandbox::new();
    // A runtime that may run per project (never started here) makes a bundle project-capable.
    let runtime = r#", "commands": [{"id": "NAME.run", "title": "Run"}], "runtime": {"command": "node", "args": ["plugin.mjs"], "scopeSupport": ["user", "project"]}"#;
    let ids = bundles(&sandbox, "p", runtime);
    let project = sandbox.work.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.to_str().unwrap();
    // One bundle is enabled in the project explicitly, the others follow the user's choice.
    assert_eq!(
        sandbox.run(&["enable", &ids[4], "--project", project]).code,
        0
    );
    let before = policy(&sandbox);
    let start = sandbox.run(&["bisect", "start", "--project", project, "--format", "json"]);
    assert_eq!(start.code, 0, "{start:#?}");
    assert_eq!(
        start.json()["result"]["candidates"]
            .as_array()
            .unwrap()
            .len(),
        12
    );
    // The user realm is untouched: every bundle stays enabled there.
    assert_eq!(enabled(&sandbox).len(), 12);
    let after_start = policy(&sandbox);
    let disabled_here = after_start["projects"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(
        disabled_here
            .as_object()
            .unwrap()
            .values()
            .filter(|entry| entry["state"] == "disabled")
            .count(),
        6,
        "{after_start}"
    );
    assert_eq!(sandbox.run(&["bisect", "bad"]).code, 0);
    assert_eq!(sandbox.run(&["bisect", "skip"]).code, 0);
    let reset = sandbox.run(&["bisect", "reset"]);
    assert_eq!(reset.code, 0, "{reset:#?}");
    assert_eq!(policy(&sandbox), before);
}
