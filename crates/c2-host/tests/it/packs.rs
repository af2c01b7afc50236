//! The example packs under packs/, run for real: Node and Python runtimes.

use std::path::PathBuf;

use serde_json::json;

use crate::support::{Env, git_repo};

fn pack(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../packs")
        .join(name)
}

#[tokio::test]
async fn hello_runtime_reports_the_working_tree_through_git_status() {
    let env = Env::new().await;
    let repo = env.path("repo");
    git_repo(&repo);
    let id = env.install_ready(&pack("hello-runtime")).await;
    let result = env
        .invoke("hello.status", json!({"cwd": repo.to_str().unwrap()}))
        .await
        .unwrap();
    assert_eq!(
        result["greeting"],
        json!("Hello from hello-runtime"),
        "{result}"
    );
    assert_eq!(result["git"]["branch"], json!("trunk"), "{result}");
    assert_eq!(
        result["summary"],
        json!("on trunk, 1 changed file"),
        "{result}"
    );
    // Its skills/changed subscription is live after activation.
    env.host.kernel().emit("skills/changed", json!(null));
    let status = env.host.list().into_iter().find(|b| b.id == id).unwrap();
    assert_eq!(status.state, "active");
    env.host.shutdown().await;
}

#[tokio::test]
async fn hello_python_greets_and_validates_its_own_arguments() {
    let env = Env::new().await;
    env.install_ready(&pack("hello-python")).await;
    let result = env
        .invoke("hello-python.greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(result["greeting"], json!("Hello, Ada!"));
    let error = env
        .invoke("hello-python.greet", json!({"name": 7}))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "hello-python.greet: invalid args at `/name`: 7 is not of type 'string'"
    );
    let second = env.invoke("hello-python.greet", json!({})).await.unwrap();
    assert_eq!(second["greetings"], json!(2));
    env.host.shutdown().await;
}
