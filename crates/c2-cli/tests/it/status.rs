//! `status` and `top` against the real binary: this process's dormant runtimes without a
//! service, a running `serve`'s live ones (pid, calls, usage) when one answers.

use serde_json::json;

use crate::serve::{exit_code, runtime_pid, serve_on_socket, sigterm, socket_client};
use crate::{Sandbox, git_repo, pack};

#[test]
fn status_and_top_show_a_running_services_runtimes_else_this_processs_as_dormant() {
    let sandbox = Sandbox::new();
    let repo = sandbox.work.join("repo");
    git_repo(&repo, &[("README.md", "hello\n")]);
    let source = pack("hello-runtime");
    let install = sandbox.run(&["install", source.to_str().unwrap(), "--trust", "--enable"]);
    assert_eq!(install.code, 0, "{install:#?}");
    let hello = install.stdout.trim().to_owned();

    // No service: the one-shot process has run nothing.
    let cold = sandbox.run(&["--format", "json", "status"]);
    assert_eq!(cold.code, 0, "{cold:#?}");
    let result = &cold.json()["result"];
    assert_eq!(result["service"], false);
    let row = &result["runtimes"][0];
    assert_eq!(row["bundle"], hello.as_str());
    assert_eq!(row["realm"], "global");
    assert_eq!(row["state"], "dormant");
    assert_eq!(row["calls"]["served"], 0);
    assert_eq!(row["pid"], json!(null));
    let human = sandbox.run(&["status"]);
    assert_eq!(human.code, 0, "{human:#?}");
    assert!(
        human.stdout.contains("no `c2-plugins serve` runs"),
        "{human:#?}"
    );
    assert!(
        human
            .stdout
            .lines()
            .any(|line| line.contains(&hello) && line.contains("dormant")),
        "{human:#?}"
    );

    // A running service: its runtime, warm after a call through it.
    let (mut service, socket) = serve_on_socket(&sandbox, "serve.log");
    let args = json!({"cwd": repo}).to_string();
    let invoked = sandbox.run(&["invoke", "hello.status", "--args", &args]);
    assert_eq!(invoked.code, 0, "{invoked:#?}");
    let mut client = socket_client(&socket);
    let pid = runtime_pid(&mut client, &hello).expect("the call ran in the service");
    let warm = sandbox.run(&["--format", "json", "status"]);
    assert_eq!(warm.code, 0, "{warm:#?}");
    let result = &warm.json()["result"];
    assert_eq!(result["service"], true);
    let row = &result["runtimes"][0];
    assert_eq!(row["state"], "running", "{row}");
    assert_eq!(row["pid"], pid);
    assert_eq!(row["starts"], 1);
    assert_eq!(row["crashes"], 0);
    assert_eq!(row["calls"]["served"], 1);
    assert!(row["calls"]["p99Us"].as_u64().unwrap() > 0, "{row}");
    assert!(row["usage"]["rssBytes"].as_u64().unwrap() > 0, "{row}");
    assert!(row["usage"]["processes"].as_u64().unwrap() >= 1, "{row}");
    let human = sandbox.run(&["status"]);
    assert!(
        human.stdout.contains("the running service for"),
        "{human:#?}"
    );
    assert!(
        human
            .stdout
            .lines()
            .any(|line| line.contains(&hello) && line.contains(&pid.to_string())),
        "{human:#?}"
    );

    // `health/changed`: the state at once, then a change when a call is counted.
    client.ok("events/subscribe", json!({"event": "health/changed"}));
    let first = client.notification("events/event");
    assert_eq!(first["params"]["name"], "health/changed");
    assert_eq!(
        first["params"]["payload"]["runtimes"][0]["calls"]["served"],
        1
    );
    let again = sandbox.run(&["invoke", "hello.status", "--args", &args]);
    assert_eq!(again.code, 0, "{again:#?}");
    let changed = client.notification("events/event");
    assert_eq!(
        changed["params"]["payload"]["runtimes"][0]["calls"]["served"],
        2
    );

    // `top`: one JSON document per refresh.
    let top = sandbox.run(&["--format", "json", "top", "--iterations", "2"]);
    assert_eq!(top.code, 0, "{top:#?}");
    let documents: Vec<serde_json::Value> = top
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(documents.len(), 2, "{top:#?}");
    for document in &documents {
        assert_eq!(document["ok"], true);
        assert_eq!(document["result"]["runtimes"][0]["state"], "running");
    }

    // --no-service: this process's own host, where nothing ran.
    let here = sandbox.run(&["--format", "json", "status", "--no-service"]);
    assert_eq!(here.json()["result"]["service"], false);
    assert_eq!(here.json()["result"]["runtimes"][0]["state"], "dormant");
    // --project keeps the user realm's rows.
    let project = sandbox.run(&[
        "--format",
        "json",
        "status",
        "--project",
        repo.to_str().unwrap(),
    ]);
    assert_eq!(
        project.json()["result"]["runtimes"][0]["bundle"],
        hello.as_str()
    );

    sigterm(&service);
    assert_eq!(exit_code(&mut service), 0);
}
