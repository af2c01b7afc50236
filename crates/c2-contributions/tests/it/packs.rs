//! The example packs under packs/, run for real: the Node runtime's UI descriptor.

use std::path::PathBuf;

use c2_contributions::prelude::*;
use c2_host::Target;
use serde_json::json;

use crate::support::{Env, git_repo};

fn pack(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../packs")
        .join(name)
}

#[tokio::test]
async fn hello_runtime_serves_its_ui_descriptor_with_a_host_built_context() {
    let env = Env::new().await;
    let repo = env.path("repo");
    git_repo(&repo);
    let id = env.install_ready(&pack("hello-runtime")).await;
    let request = c2_contributions::UiRequest {
        id: id.clone(),
        ui: "status".to_owned(),
        project: Some(repo.clone()),
        session_id: Some("s-1".to_owned()),
        // The frontend supplies its session's cwd (inside the project); the host builds the
        // rest of the context.
        context: Some(c2_contributions::UiContext::default().with_cwd(repo.clone())),
        ..Default::default()
    };
    let result = env.host.invoke_ui(&request).await.unwrap();
    assert_eq!(result["git"]["branch"], json!("trunk"), "{result}");
    let catalog = env.host.ui_catalog(&Target::User).unwrap();
    assert_eq!(catalog[&c2_host::UiSlot::ComposerToolbar][0].id, "status");
    env.host.shutdown().await;
}
