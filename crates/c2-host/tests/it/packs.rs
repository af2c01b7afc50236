//! The example packs under packs/, run for real: Node and Python runtimes.

use std::path::PathBuf;

use c2_host::Target;
use serde_json::json;

use crate::callbacks::git_repo;
use crate::support::Env;

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
async fn hello_runtime_serves_its_ui_descriptor_with_a_host_built_context() {
    let env = Env::new().await;
    let repo = env.path("repo");
    git_repo(&repo);
    let id = env.install_ready(&pack("hello-runtime")).await;
    let request = c2_host::UiRequest {
        id: id.clone(),
        ui: "status".to_owned(),
        project: Some(repo.clone()),
        session_id: Some("s-1".to_owned()),
        // The frontend supplies its session's cwd (inside the project); the host builds the
        // rest of the context.
        context: Some(c2_host::UiContext::default().with_cwd(repo.clone())),
        ..Default::default()
    };
    let result = env.host.invoke_ui(&request).await.unwrap();
    assert_eq!(result["git"]["branch"], json!("trunk"), "{result}");
    let catalog = env.host.ui_catalog(&Target::User).unwrap();
    assert_eq!(catalog[&c2_host::UiSlot::ComposerToolbar][0].id, "status");
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
