//! What an embedder registers next to the host's own modules: refusals, replacement, rollback.

use std::sync::Arc;

use c2_host::{ModuleError, ProtectedOwner, Target};
use c2_kernel::{
    BoxFuture, CommandSpec, Error as KernelError, Module, ModuleMeta, Realm, Role, ScopeContext,
    command_handler,
};
use serde_json::{Value, json};

use crate::support::{Env, FixtureBundle};

/// An embedder module named `name` that registers `command`, answering `answer`.
struct Answering {
    name: &'static str,
    command: &'static str,
    answer: Value,
}

impl Module for Answering {
    fn name(&self) -> &str {
        self.name
    }
    fn meta(&self) -> ModuleMeta {
        ModuleMeta::new(Role::BuiltIn, "embedder", "test")
    }
    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), KernelError>> {
        Box::pin(async move {
            let answer = self.answer.clone();
            ctx.register_command(
                self.command,
                CommandSpec::new(self.command),
                command_handler(move |_, _| {
                    let answer = answer.clone();
                    async move { Ok(answer) }
                }),
            )
        })
    }
}

fn answering(name: &'static str, command: &'static str, answer: Value) -> Arc<dyn Module> {
    Arc::new(Answering {
        name,
        command,
        answer,
    })
}

#[tokio::test]
async fn a_module_registers_and_a_new_revision_of_it_replaces_it() {
    let env = Env::new().await;
    let host = &env.host;
    host.register_module(answering("mine", "mine.run", json!(1)), 1)
        .await
        .unwrap();
    assert_eq!(env.invoke("mine.run", json!({})).await.unwrap(), json!(1));
    host.register_module(answering("mine", "mine.run", json!(2)), 2)
        .await
        .unwrap();
    assert_eq!(env.invoke("mine.run", json!({})).await.unwrap(), json!(2));
}

#[tokio::test]
async fn the_same_name_and_revision_again_is_an_error_not_a_silent_no_op() {
    let env = Env::new().await;
    let host = &env.host;
    host.register_module(answering("mine", "mine.run", json!(1)), 7)
        .await
        .unwrap();
    let error = host
        .register_module(answering("mine", "mine.run", json!("other")), 7)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModuleError::AlreadyRegistered {
            name: "mine".to_owned(),
            revision: 7
        }
    );
    assert_eq!(error.kind(), "already_registered");
    assert_eq!(env.invoke("mine.run", json!({})).await.unwrap(), json!(1));
}

#[tokio::test]
async fn built_in_essential_and_bundle_names_cannot_be_replaced() {
    let env = Env::new().await;
    let host = &env.host;
    let dir = FixtureBundle::new("taken").write(&env.path("bundles"));
    let id = env.install_ready(&dir).await;
    let bundle = c2_host::module_name(&id);
    let before = host.kernel().catalog(&Realm::Global);
    for (name, owner) in [
        ("git", ProtectedOwner::Host),
        ("plugins", ProtectedOwner::Essential),
        ("bundle:not-installed", ProtectedOwner::Bundle),
    ] {
        for revision in [1, 2, 99] {
            let error = host
                .register_module(answering(name, "evil.run", json!("evil")), revision)
                .await
                .unwrap_err();
            assert_eq!(
                error,
                ModuleError::Protected {
                    name: name.to_owned(),
                    owner
                },
                "{name}@{revision}"
            );
            assert!(error.to_string().contains("pick another name"), "{error}");
        }
    }
    let leaked: &'static str = bundle.clone().leak();
    let error = host
        .register_module(answering(leaked, "evil.run", json!("evil")), 5)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            ModuleError::Protected {
                owner: ProtectedOwner::Bundle,
                ..
            }
        ),
        "{error:?}"
    );
    // Nothing changed: same factories, same revisions, and the commands still answer.
    let after = host.kernel().catalog(&Realm::Global);
    let revisions = |c: &[c2_kernel::CatalogEntry]| -> Vec<(String, u64)> {
        c.iter().map(|e| (e.name.clone(), e.revision)).collect()
    };
    assert_eq!(revisions(&before), revisions(&after));
    assert!(env.invoke("evil.run", json!({})).await.is_err());
    assert!(env.invoke("fixture.echo", json!({"x": 1})).await.is_ok());
    let listed = host.invoke(&Target::User, "plugins.list", json!({})).await;
    assert!(listed.is_ok(), "{listed:?}");
}

#[tokio::test]
async fn a_module_whose_command_is_taken_is_refused_with_the_collision_and_rolled_back() {
    let env = Env::new().await;
    let host = &env.host;
    let error = host
        .register_module(answering("squatter", "git.status", json!("mine")), 1)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModuleError::DuplicateCommand {
            module: "squatter".to_owned(),
            command: "git.status".to_owned(),
            realm: Realm::Global.to_string(),
            owner: "git".to_owned(),
        }
    );
    assert_eq!(error.kind(), "duplicate_command");
    assert!(
        host.kernel()
            .catalog(&Realm::Global)
            .iter()
            .all(|e| e.name != "squatter"),
        "a refused module is unregistered again"
    );
    // The name is free again, for a module that does not collide.
    host.register_module(answering("squatter", "squatter.run", json!(3)), 1)
        .await
        .unwrap();
    assert_eq!(
        env.invoke("squatter.run", json!({})).await.unwrap(),
        json!(3)
    );
}

#[tokio::test]
async fn a_failing_new_revision_restores_the_previous_one() {
    let env = Env::new().await;
    let host = &env.host;
    host.register_module(answering("mine", "mine.run", json!("v1")), 1)
        .await
        .unwrap();
    let error = host
        .register_module(answering("mine", "plugins.list", json!("v2")), 2)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ModuleError::DuplicateCommand { command, .. } if command == "plugins.list"),
        "{error:?}"
    );
    assert_eq!(
        env.invoke("mine.run", json!({})).await.unwrap(),
        json!("v1")
    );
    let entry = host
        .kernel()
        .catalog(&Realm::Global)
        .into_iter()
        .find(|e| e.name == "mine")
        .unwrap();
    assert_eq!(entry.revision, 1);
    // Revision 2 was refused, so it is not "already registered".
    host.register_module(answering("mine", "mine.run", json!("v2")), 2)
        .await
        .unwrap();
    assert_eq!(
        env.invoke("mine.run", json!({})).await.unwrap(),
        json!("v2")
    );
}
