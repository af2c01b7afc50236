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

/// Polls a future to completion on this thread, with no tokio runtime anywhere.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

#[test]
fn opening_outside_a_tokio_runtime_is_an_error_not_a_panic() {
    let root = tempfile::tempdir().unwrap();
    let plugins = root.path().join("plugins");
    let Err(error) = block_on(c2_host::PluginHost::open(c2_host::HostOptions::new(
        &plugins,
    ))) else {
        panic!("opened a host with no runtime");
    };
    assert_eq!(error.kind(), "no_runtime");
    assert!(error.to_string().contains("tokio runtime"), "{error}");
    assert!(!plugins.exists(), "nothing was created");
}

/// The module contract, realms, streams and options are named through c2_host; only what the
/// module does inside its scope (a command's spec and handler, an event's payload) is
/// c2-kernel's vocabulary.
struct OnlyHost;

impl c2_host::Module for OnlyHost {
    fn name(&self) -> &str {
        "only-host"
    }
    fn meta(&self) -> c2_host::ModuleMeta {
        c2_host::ModuleMeta::new(c2_host::Role::BuiltIn, "embedder", "test")
    }
    fn apply<'a>(
        &'a self,
        ctx: &'a mut c2_host::ScopeContext,
    ) -> c2_host::BoxFuture<'a, Result<(), c2_host::KernelError>> {
        Box::pin(async move {
            ctx.register_command(
                "only-host.run",
                c2_kernel::CommandSpec::new("run"),
                c2_kernel::command_handler(|_, _| async { Ok(json!("from c2-host alone")) }),
            )
        })
    }
}

#[tokio::test]
async fn an_embedder_takes_the_module_contract_realms_and_options_from_c2_host() {
    let root = tempfile::tempdir().unwrap();
    let mut options = c2_host::HostOptions::new(root.path().join("plugins"));
    options.kernel = c2_host::KernelOptions::default();
    options.peer = c2_host::PeerOptions::default();
    options.supervisor = c2_host::SupervisorOptions::default();
    options.run = c2_host::RunOptions::default();
    options.limits = c2_host::Limits::default();
    options.manifest = c2_host::ManifestOptions::default();
    let host = c2_host::PluginHost::open(options).await.unwrap();
    host.register_module(Arc::new(OnlyHost), 1).await.unwrap();
    let frontend = host
        .kernel()
        .open_scope(&c2_host::Realm::Global, "frontend")
        .unwrap();
    let mut events: c2_host::EventStream = frontend.subscribe("only-host/ping").unwrap();
    assert_eq!(host.kernel().emit("only-host/ping", json!(1)), 1);
    let event: c2_kernel::Event = events.recv().await.unwrap();
    assert_eq!(event.payload, json!(1));
    assert_eq!(
        host.invoke(&Target::User, "only-host.run", json!({}))
            .await
            .unwrap(),
        json!("from c2-host alone")
    );
    host.shutdown().await;
}
