use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::*;

type ApplyFn = Arc<dyn Fn(&mut ScopeContext) -> Result<(), Error> + Send + Sync>;

struct TestModule {
    name: String,
    meta: ModuleMeta,
    inject: Vec<String>,
    optional: Vec<String>,
    apply: ApplyFn,
    applies: Arc<AtomicUsize>,
}

fn module(name: &str) -> TestModule {
    TestModule {
        name: name.to_owned(),
        meta: ModuleMeta::new(Role::BuiltIn, "c2", "test"),
        inject: Vec::new(),
        optional: Vec::new(),
        apply: Arc::new(|_| Ok(())),
        applies: Arc::new(AtomicUsize::new(0)),
    }
}

impl TestModule {
    fn project(mut self) -> Self {
        self.meta.scopes = vec![ScopeKind::User, ScopeKind::Project];
        self
    }
    fn essential(mut self) -> Self {
        self.meta.essential = true;
        self.meta.role = Role::Core;
        self
    }
    fn inject(mut self, names: &[&str]) -> Self {
        self.inject = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }
    fn optional(mut self, names: &[&str]) -> Self {
        self.optional = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }
    fn on_apply(
        mut self,
        f: impl Fn(&mut ScopeContext) -> Result<(), Error> + Send + Sync + 'static,
    ) -> Self {
        self.apply = Arc::new(f);
        self
    }
    fn counter(&self) -> Arc<AtomicUsize> {
        self.applies.clone()
    }
    fn arc(self) -> Arc<dyn Module> {
        Arc::new(self)
    }
}

impl Module for TestModule {
    fn name(&self) -> &str {
        &self.name
    }
    fn meta(&self) -> ModuleMeta {
        self.meta.clone()
    }
    fn inject(&self) -> Vec<String> {
        self.inject.clone()
    }
    fn optional_inject(&self) -> Vec<String> {
        self.optional.clone()
    }
    fn config_schema(&self) -> Option<Value> {
        Some(json!({ "type": "object" }))
    }
    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            self.applies.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            (self.apply)(ctx)
        })
    }
}

fn answer(value: Value) -> CommandHandler {
    command_handler(move |_, _| {
        let value = value.clone();
        async move { Ok(value) }
    })
}

fn internal(ctx: &mut ScopeContext, name: &str, value: Value) -> Result<(), Error> {
    ctx.register_command(name, CommandSpec::new(name), answer(value))
}

fn public(ctx: &mut ScopeContext, name: &str, value: Value) -> Result<(), Error> {
    ctx.register_command(
        name,
        CommandSpec::new(name).extension_public(),
        answer(value),
    )
}

/// Answers with the realm the instance was applied in, so tests see which instance ran.
fn realm_answer(ctx: &mut ScopeContext, name: &str, visibility: Visibility) -> Result<(), Error> {
    let realm = json!(ctx.realm().to_string());
    let mut spec = CommandSpec::new(name);
    spec.visibility = visibility;
    ctx.register_command(name, spec, answer(realm))
}

fn project(key: &str) -> Realm {
    Realm::project(key)
}

fn state_of(kernel: &Kernel, realm: &Realm, name: &str) -> ModuleState {
    kernel
        .catalog(realm)
        .into_iter()
        .find(|e| e.name == name)
        .map(|e| e.state)
        .unwrap_or(ModuleState::Disabled)
}

async fn kernel_with(modules: Vec<Arc<dyn Module>>) -> Kernel {
    let kernel = Kernel::default();
    for module in modules {
        kernel.register_factory(module, 1);
    }
    kernel.reconcile().await;
    kernel
}

#[tokio::test]
async fn project_registration_shadows_the_global_command_of_the_same_name() {
    let git = module("git")
        .project()
        .on_apply(|ctx| realm_answer(ctx, "git.status", Visibility::ExtensionPublic));
    let kernel = kernel_with(vec![git.arc()]).await;
    let a = project("/work/a");
    assert_eq!(
        kernel.call(&a, "git.status", Value::Null).await,
        Ok(json!("project `/work/a`"))
    );
    assert_eq!(
        kernel.call(&Realm::Global, "git.status", Value::Null).await,
        Ok(json!("global"))
    );
    let listed = kernel.commands(&a);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].realm, a);
}

#[tokio::test]
async fn project_realm_falls_back_to_global_commands() {
    let store = module("store").on_apply(|ctx| internal(ctx, "store.get", json!("global store")));
    let kernel = kernel_with(vec![store.arc()]).await;
    let a = project("/work/a");
    assert_eq!(
        kernel.call(&a, "store.get", Value::Null).await,
        Ok(json!("global store"))
    );
    assert_eq!(
        kernel
            .commands(&a)
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["store.get"]
    );
    assert_eq!(
        kernel
            .call(&a, "store.missing", Value::Null)
            .await
            .map_err(|e| e.code()),
        Err(-32001),
    );
}

#[tokio::test]
async fn blocker_beats_fallback_but_not_a_local_handler() {
    let a = ProjectKey::new("/work/a");
    let blocked = a.clone();
    let realm = Realm::Project(a);
    let tools = module("tools").on_apply(|ctx| {
        internal(ctx, "tools.run", json!("global tools"))?;
        internal(ctx, "tools.local", json!("global local"))
    });
    // A project-capable module that blocks `tools` in its project but also keeps one local command.
    let guard = module("guard").project().on_apply(move |ctx| {
        if let Realm::Project(key) = ctx.realm().clone()
            && key == blocked
        {
            ctx.block_fallback(&key, "tools")?;
        }
        Ok(())
    });
    let kernel = kernel_with(vec![tools.arc(), guard.arc()]).await;
    let error = kernel
        .call(&realm, "tools.run", Value::Null)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::FallbackBlocked { .. }), "{error}");
    assert_eq!(error.code(), -32002);
    assert!(kernel.commands(&realm).is_empty());
    // A handler registered in the project realm itself is not affected by the blocker.
    let local = kernel.open_scope(&realm, "tools").unwrap();
    local
        .register_command(
            "tools.local",
            CommandSpec::new("local"),
            answer(json!("project local")),
        )
        .unwrap();
    assert_eq!(
        kernel.call(&realm, "tools.local", Value::Null).await,
        Ok(json!("project local"))
    );
    assert_eq!(
        kernel
            .call(&project("/work/b"), "tools.run", Value::Null)
            .await,
        Ok(json!("global tools"))
    );
}

#[tokio::test]
async fn blockers_follow_scope_reloads() {
    let guard = module("guard").project().on_apply(|ctx| {
        let block = ctx
            .config()
            .get("block")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let (true, Realm::Project(key)) = (block, ctx.realm().clone()) {
            ctx.block_fallback(&key, "tools")?;
        }
        Ok(())
    });
    let tools = module("tools").on_apply(|ctx| internal(ctx, "tools.run", json!("ran")));
    let kernel = kernel_with(vec![guard.arc(), tools.arc()]).await;
    let realm = project("/work/a");
    let desired =
        |block: bool| DesiredState::default().with("guard", None, Some(json!({ "block": block })));

    kernel.set_desired(desired(true)).unwrap();
    kernel.reconcile().await;
    assert!(matches!(
        kernel.call(&realm, "tools.run", Value::Null).await,
        Err(Error::FallbackBlocked { .. })
    ));

    kernel.set_desired(desired(false)).unwrap();
    kernel.reconcile().await;
    assert_eq!(
        kernel.call(&realm, "tools.run", Value::Null).await,
        Ok(json!("ran"))
    );

    kernel.set_desired(desired(true)).unwrap();
    kernel.reconcile().await;
    assert!(matches!(
        kernel.call(&realm, "tools.run", Value::Null).await,
        Err(Error::FallbackBlocked { .. })
    ));
}

#[tokio::test]
async fn project_disabling_a_plugin_blocks_fallback_to_its_global_commands() {
    let ext = module("bundle:x")
        .project()
        .on_apply(|ctx| realm_answer(ctx, "x.run", Visibility::Internal));
    let kernel = kernel_with(vec![ext.arc()]).await;
    let a = ProjectKey::new("/work/a");
    kernel
        .set_project_desired(
            a.clone(),
            DesiredState::default().with("bundle:x", Some(false), None),
        )
        .unwrap();
    kernel.reconcile().await;
    let realm = Realm::Project(a);
    assert!(matches!(
        kernel.call(&realm, "x.run", Value::Null).await,
        Err(Error::FallbackBlocked { .. })
    ));
    assert_eq!(state_of(&kernel, &realm, "bundle:x"), ModuleState::Disabled);
    assert_eq!(
        kernel.call(&project("/work/b"), "x.run", Value::Null).await,
        Ok(json!("project `/work/b`"))
    );
}

#[tokio::test]
async fn internal_commands_are_default_deny_for_extensions() {
    let git = module("git").on_apply(|ctx| {
        public(ctx, "git.status", json!("status"))?;
        internal(ctx, "git.commit", json!("committed"))?;
        Ok(())
    });
    let kernel = kernel_with(vec![git.arc()]).await;
    let g = Realm::Global;
    assert_eq!(
        kernel.call_extension(&g, "git.status", Value::Null).await,
        Ok(json!("status"))
    );
    let refused = kernel
        .call_extension(&g, "git.commit", Value::Null)
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::NotExtensionPublic { .. }));
    assert_eq!(refused.code(), -32002);
    assert_eq!(
        kernel.call(&g, "git.commit", Value::Null).await,
        Ok(json!("committed"))
    );
    let view: Vec<String> = kernel
        .extension_commands(&g)
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(view, ["git.status"]);

    // A project-internal command never re-exposes the public global one of the same name.
    let a = project("/work/a");
    let _lease = kernel.lease(&a).await.unwrap();
    let scope = kernel.open_scope(&a, "git").unwrap();
    scope
        .register_command(
            "git.status",
            CommandSpec::new("internal status"),
            answer(json!("local")),
        )
        .unwrap();
    assert!(matches!(
        kernel.call_extension(&a, "git.status", Value::Null).await,
        Err(Error::NotExtensionPublic { .. })
    ));
    assert_eq!(
        kernel.call(&a, "git.status", Value::Null).await,
        Ok(json!("local"))
    );
    assert!(
        kernel
            .extension_commands(&a)
            .iter()
            .all(|c| c.name != "git.status")
    );
}

#[tokio::test]
async fn extension_view_never_shows_another_projects_commands() {
    let ext = module("bundle:x").project().on_apply(|ctx| {
        if let Realm::Project(key) = ctx.realm().clone() {
            let name = format!("x.{}", key.as_str().trim_start_matches("/work/"));
            return public(ctx, &name, json!(null));
        }
        public(ctx, "x.global", json!(null))
    });
    let kernel = kernel_with(vec![ext.arc()]).await;
    let (a, b) = (project("/work/a"), project("/work/b"));
    let _leases = (
        kernel.lease(&a).await.unwrap(),
        kernel.lease(&b).await.unwrap(),
    );
    let names = |realm: &Realm| {
        kernel
            .extension_commands(realm)
            .into_iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&a), ["x.a", "x.global"]);
    assert_eq!(names(&b), ["x.b", "x.global"]);
    assert_eq!(names(&Realm::Global), ["x.global"]);
    assert!(matches!(
        kernel.call_extension(&a, "x.b", Value::Null).await,
        Err(Error::UnknownCommand { .. })
    ));
}

#[tokio::test]
async fn duplicate_command_in_a_realm_is_refused_for_the_second_owner() {
    let first = module("first").on_apply(|ctx| internal(ctx, "dup.run", json!("first")));
    let second = module("second").on_apply(|ctx| internal(ctx, "dup.run", json!("second")));
    let kernel = kernel_with(vec![second.arc(), first.arc()]).await;
    assert_eq!(
        kernel.call(&Realm::Global, "dup.run", Value::Null).await,
        Ok(json!("first"))
    );
    assert!(
        matches!(state_of(&kernel, &Realm::Global, "second"), ModuleState::Failed { reason } if reason.contains("first"))
    );
    // A different module cannot shadow another module's global command from a project realm.
    let a = project("/work/a");
    let _lease = kernel.lease(&a).await.unwrap();
    let scope = kernel.open_scope(&a, "intruder").unwrap();
    let refused = scope
        .register_command("dup.run", CommandSpec::new("x"), answer(json!(0)))
        .unwrap_err();
    assert!(matches!(refused, Error::DuplicateCommand { .. }));
}

#[tokio::test]
async fn unloading_one_realm_leaves_the_others() {
    let cleaned = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = cleaned.clone();
    let ext = module("bundle:x").project().on_apply(move |ctx| {
        let log = log.clone();
        let realm = ctx.realm().to_string();
        ctx.on_cleanup(move || async move { log.lock().unwrap().push(realm) })?;
        realm_answer(ctx, "x.run", Visibility::Internal)
    });
    let kernel = kernel_with(vec![ext.arc()]).await;
    let (a, b) = (project("/work/a"), project("/work/b"));
    kernel.call(&a, "x.run", Value::Null).await.unwrap();
    kernel.call(&b, "x.run", Value::Null).await.unwrap();
    assert!(kernel.unload_project(&ProjectKey::new("/work/a")).await);
    assert_eq!(*cleaned.lock().unwrap(), ["project `/work/a`"]);
    assert_eq!(kernel.live_projects(), [ProjectKey::new("/work/b")]);
    assert_eq!(
        kernel.call(&b, "x.run", Value::Null).await,
        Ok(json!("project `/work/b`"))
    );
    assert_eq!(
        kernel.call(&Realm::Global, "x.run", Value::Null).await,
        Ok(json!("global"))
    );
}

#[tokio::test]
async fn a_panic_in_apply_fails_only_that_module() {
    let bad = module("bad").on_apply(|ctx| {
        internal(ctx, "bad.half", json!(1))?;
        panic!("apply exploded")
    });
    let good = module("good").on_apply(|ctx| internal(ctx, "good.run", json!("fine")));
    let kernel = kernel_with(vec![bad.arc(), good.arc()]).await;
    assert!(
        matches!(state_of(&kernel, &Realm::Global, "bad"), ModuleState::Failed { reason } if reason.contains("apply exploded"))
    );
    assert!(matches!(
        kernel.call(&Realm::Global, "bad.half", Value::Null).await,
        Err(Error::UnknownCommand { .. })
    ));
    assert_eq!(
        kernel.call(&Realm::Global, "good.run", Value::Null).await,
        Ok(json!("fine"))
    );
}

#[tokio::test]
async fn a_panic_in_a_cleanup_is_contained_and_older_cleanups_still_run() {
    let ran = Arc::new(AtomicUsize::new(0));
    let seen = ran.clone();
    let fragile = module("fragile").on_apply(move |ctx| {
        let seen = seen.clone();
        ctx.on_cleanup(move || async move {
            seen.fetch_add(1, Ordering::SeqCst);
        })?;
        ctx.on_cleanup(|| async { panic!("cleanup exploded") })
    });
    let other = module("other").on_apply(|ctx| internal(ctx, "other.run", json!("ok")));
    let kernel = kernel_with(vec![fragile.arc(), other.arc()]).await;
    kernel
        .set_desired(DesiredState::default().with("fragile", Some(false), None))
        .unwrap();
    kernel.reconcile().await;
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert!(
        kernel
            .diagnostics()
            .iter()
            .any(|d| d.module == "fragile" && d.message.contains("cleanup exploded"))
    );
    assert_eq!(
        kernel.call(&Realm::Global, "other.run", Value::Null).await,
        Ok(json!("ok"))
    );
}

#[tokio::test]
async fn a_panicking_listener_fails_only_its_scope() {
    let fragile = module("fragile").on_apply(|ctx| {
        internal(ctx, "fragile.run", json!(1))?;
        ctx.listen("boom", listener(|_| async { panic!("listener exploded") }))
    });
    let steady_seen = Arc::new(AtomicUsize::new(0));
    let seen = steady_seen.clone();
    let steady = module("steady").on_apply(move |ctx| {
        let seen = seen.clone();
        ctx.listen(
            "boom",
            listener(move |_| {
                let seen = seen.clone();
                async move {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
            }),
        )
    });
    let kernel = kernel_with(vec![fragile.arc(), steady.arc()]).await;
    assert_eq!(kernel.emit("boom", json!({})), 2);
    wait_until(|| {
        matches!(
            state_of(&kernel, &Realm::Global, "fragile"),
            ModuleState::Failed { .. }
        )
    })
    .await;
    assert!(matches!(
        kernel
            .call(&Realm::Global, "fragile.run", Value::Null)
            .await,
        Err(Error::UnknownCommand { .. })
    ));
    assert_eq!(
        state_of(&kernel, &Realm::Global, "steady"),
        ModuleState::Active { generation: 1 }
    );
    assert_eq!(kernel.emit("boom", json!({})), 1);
    wait_until(|| steady_seen.load(Ordering::SeqCst) == 2).await;
}

async fn wait_until(condition: impl Fn() -> bool) {
    // Generous: the machine may be loaded; the condition is what is asserted, not the time.
    for _ in 0..2000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("condition not reached within 10 s");
}

fn provider(name: &str, service: &'static str) -> TestModule {
    module(name).on_apply(move |ctx| {
        let value = ctx.config().clone();
        ctx.provide_service(service, Arc::new(value))
    })
}

fn consumer(name: &str, service: &'static str, command: &'static str) -> TestModule {
    module(name).inject(&[service]).on_apply(move |ctx| {
        let seen = ctx
            .service::<Value>(service)
            .map(|v| (*v).clone())
            .unwrap_or(Value::Null);
        internal(ctx, command, seen)
    })
}

#[tokio::test]
async fn a_module_waits_for_its_dependency_regardless_of_load_order() {
    for provider_first in [true, false] {
        let kernel = Kernel::default();
        let (p, c) = (
            provider("z-store", "store"),
            consumer("a-user", "store", "user.run"),
        );
        if provider_first {
            kernel.register_factory(p.arc(), 1);
            kernel.register_factory(c.arc(), 1);
        } else {
            kernel.register_factory(c.arc(), 1);
            kernel.reconcile().await;
            assert_eq!(
                state_of(&kernel, &Realm::Global, "a-user"),
                ModuleState::Pending {
                    missing: vec!["store".to_owned()]
                }
            );
            kernel.register_factory(p.arc(), 1);
        }
        kernel.reconcile().await;
        assert_eq!(
            state_of(&kernel, &Realm::Global, "a-user"),
            ModuleState::Active { generation: 1 }
        );
        assert_eq!(
            kernel.call(&Realm::Global, "user.run", Value::Null).await,
            Ok(Value::Null)
        );
    }
}

#[tokio::test]
async fn losing_a_dependency_unloads_dependents() {
    let order = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let (o1, o2) = (order.clone(), order.clone());
    let p = module("store").on_apply(move |ctx| {
        let o = o1.clone();
        ctx.on_cleanup(move || async move { o.lock().unwrap().push("store") })?;
        ctx.provide_service("store", Arc::new(json!(1)))
    });
    let c = consumer("user", "store", "user.run").on_apply(move |ctx| {
        let o = o2.clone();
        ctx.on_cleanup(move || async move { o.lock().unwrap().push("user") })?;
        internal(ctx, "user.run", json!(1))
    });
    let kernel = kernel_with(vec![p.arc(), c.arc()]).await;
    assert!(
        kernel
            .call(&Realm::Global, "user.run", Value::Null)
            .await
            .is_ok()
    );
    kernel
        .set_desired(DesiredState::default().with("store", Some(false), None))
        .unwrap();
    kernel.reconcile().await;
    assert_eq!(
        *order.lock().unwrap(),
        ["user", "store"],
        "dependents are disposed first"
    );
    assert_eq!(
        state_of(&kernel, &Realm::Global, "user"),
        ModuleState::Pending {
            missing: vec!["store".to_owned()]
        }
    );
    assert!(
        kernel
            .call(&Realm::Global, "user.run", Value::Null)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn reconfiguring_a_service_reloads_its_dependents_and_an_unchanged_config_reloads_nothing() {
    let (p, c) = (
        provider("store", "store"),
        consumer("user", "store", "user.run"),
    );
    let (store_applies, user_applies) = (p.counter(), c.counter());
    let kernel = kernel_with(vec![p.arc(), c.arc()]).await;
    let configure = |v: i64| DesiredState::default().with("store", None, Some(json!(v)));

    kernel.set_desired(configure(1)).unwrap();
    kernel.reconcile().await;
    assert_eq!(
        kernel.call(&Realm::Global, "user.run", Value::Null).await,
        Ok(json!(1))
    );
    let (s, u) = (
        store_applies.load(Ordering::SeqCst),
        user_applies.load(Ordering::SeqCst),
    );

    let revision = kernel.revision();
    kernel.set_desired(configure(1)).unwrap();
    assert_eq!(kernel.reconcile().await, revision);
    assert_eq!(
        (
            store_applies.load(Ordering::SeqCst),
            user_applies.load(Ordering::SeqCst)
        ),
        (s, u)
    );

    kernel.set_desired(configure(2)).unwrap();
    kernel.reconcile().await;
    assert_eq!(
        (
            store_applies.load(Ordering::SeqCst),
            user_applies.load(Ordering::SeqCst)
        ),
        (s + 1, u + 1)
    );
    assert_eq!(
        kernel.call(&Realm::Global, "user.run", Value::Null).await,
        Ok(json!(2))
    );
}

#[tokio::test]
async fn optional_service_arrival_and_departure_reload_the_module() {
    let engine = provider("engine", "engine");
    let watcher = module("watcher").optional(&["engine"]).on_apply(|ctx| {
        let present = ctx.service::<Value>("engine").is_some();
        internal(ctx, "watcher.sees", json!(present))
    });
    let applies = watcher.counter();
    let kernel = kernel_with(vec![watcher.arc()]).await;
    assert_eq!(
        kernel
            .call(&Realm::Global, "watcher.sees", Value::Null)
            .await,
        Ok(json!(false))
    );
    kernel.register_factory(engine.arc(), 1);
    kernel.reconcile().await;
    assert_eq!(
        kernel
            .call(&Realm::Global, "watcher.sees", Value::Null)
            .await,
        Ok(json!(true))
    );
    kernel.remove_factory("engine").unwrap();
    kernel.reconcile().await;
    assert_eq!(
        kernel
            .call(&Realm::Global, "watcher.sees", Value::Null)
            .await,
        Ok(json!(false))
    );
    assert_eq!(applies.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn failure_rolls_back_half_registered_state() {
    let cleaned = Arc::new(AtomicUsize::new(0));
    let seen = cleaned.clone();
    let half = module("half").on_apply(move |ctx| {
        internal(ctx, "half.one", json!(1))?;
        ctx.provide_service("half", Arc::new(1_u8))?;
        let _events = ctx.subscribe("any")?;
        let seen = seen.clone();
        ctx.on_cleanup(move || async move {
            seen.fetch_add(1, Ordering::SeqCst);
        })?;
        Err(Error::module(
            "config is missing a token: set one in the plugin settings",
        ))
    });
    let kernel = kernel_with(vec![half.arc()]).await;
    assert_eq!(kernel.command_count(), 0);
    assert_eq!(kernel.scope_count(), 0);
    assert_eq!(kernel.emit("any", Value::Null), 0);
    assert_eq!(cleaned.load(Ordering::SeqCst), 1);
    assert!(
        matches!(state_of(&kernel, &Realm::Global, "half"), ModuleState::Failed { reason } if reason.contains("token"))
    );
}

#[tokio::test]
async fn two_providers_of_one_service_are_refused() {
    let kernel = kernel_with(vec![
        provider("a-store", "store").arc(),
        provider("b-store", "store").arc(),
    ])
    .await;
    assert!(matches!(
        state_of(&kernel, &Realm::Global, "a-store"),
        ModuleState::Active { .. }
    ));
    let ModuleState::Failed { reason } = state_of(&kernel, &Realm::Global, "b-store") else {
        panic!("the second provider must fail");
    };
    assert!(reason.contains("already provided by `a-store`"), "{reason}");
}

#[tokio::test]
async fn catalog_lists_metadata_state_and_revisions() {
    let kernel = Kernel::default();
    let mut off = module("off").project();
    off.meta.default_state = DefaultState::Disabled;
    off.meta.category = "vcs".to_owned();
    kernel.register_factory(off.arc(), 7);
    kernel.register_factory(consumer("user", "store", "user.run").arc(), 3);
    kernel.register_factory(module("core").essential().arc(), 1);
    kernel.reconcile().await;
    let catalog = kernel.catalog(&Realm::Global);
    let rows: Vec<(&str, u64, &ModuleState)> = catalog
        .iter()
        .map(|e| (e.name.as_str(), e.revision, &e.state))
        .collect();
    assert_eq!(
        rows,
        [
            ("core", 1, &ModuleState::Active { generation: 1 }),
            ("off", 7, &ModuleState::Disabled),
            (
                "user",
                3,
                &ModuleState::Pending {
                    missing: vec!["store".to_owned()]
                }
            ),
        ]
    );
    let off = &catalog[1];
    assert_eq!(
        (
            off.meta.category.as_str(),
            off.meta.supports(ScopeKind::Project)
        ),
        ("vcs", true)
    );
    assert_eq!(catalog[0].meta.role, Role::Core);
    assert!(catalog[0].meta.essential);
    assert_eq!(catalog[2].inject, ["store"]);
    assert_eq!(catalog[2].config_schema, Some(json!({ "type": "object" })));
    // A project realm lists only project-capable modules.
    let names: Vec<String> = kernel
        .catalog(&project("/p"))
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["off"]);
}

#[tokio::test]
async fn essential_modules_cannot_be_disabled_or_removed() {
    let kernel = kernel_with(vec![
        module("plugins")
            .essential()
            .on_apply(|ctx| internal(ctx, "plugins.list", json!([])))
            .arc(),
    ])
    .await;
    let disable = DesiredState::default().with("plugins", Some(false), None);
    assert_eq!(
        kernel.set_desired(disable.clone()),
        Err(Error::Essential {
            name: "plugins".to_owned()
        })
    );
    assert!(matches!(
        kernel.set_project_desired(ProjectKey::new("/p"), disable),
        Err(Error::Essential { .. })
    ));
    assert!(matches!(
        kernel.remove_factory("plugins"),
        Err(Error::Essential { .. })
    ));
    kernel.reconcile().await;
    assert_eq!(
        kernel
            .call(&Realm::Global, "plugins.list", Value::Null)
            .await,
        Ok(json!([]))
    );
}

#[tokio::test]
async fn reconcile_rebuilds_a_changed_factory_and_bumps_the_revision_once() {
    let kernel = Kernel::default();
    let v1 = module("bundle:x")
        .project()
        .on_apply(|ctx| internal(ctx, "x.version", json!(1)));
    kernel.register_factory(v1.arc(), 1);
    let r1 = kernel.reconcile().await;
    let a = project("/a");
    kernel.call(&a, "x.version", Value::Null).await.unwrap();
    let r2 = kernel.revision();
    assert_eq!(r2, r1 + 1, "building the project realm is one change");

    let same = module("bundle:x")
        .project()
        .on_apply(|ctx| internal(ctx, "x.version", json!("ignored")));
    assert!(!kernel.register_factory(same.arc(), 1));
    assert_eq!(kernel.reconcile().await, r2);

    let v2 = module("bundle:x")
        .project()
        .on_apply(|ctx| internal(ctx, "x.version", json!(2)));
    let applies = v2.counter();
    assert!(kernel.register_factory(v2.arc(), 2));
    assert_eq!(kernel.reconcile().await, r2 + 1);
    assert_eq!(
        applies.load(Ordering::SeqCst),
        2,
        "rebuilt in the global and the project realm"
    );
    assert_eq!(
        kernel.call(&Realm::Global, "x.version", Value::Null).await,
        Ok(json!(2))
    );
    assert_eq!(
        kernel.call(&a, "x.version", Value::Null).await,
        Ok(json!(2))
    );
    assert_eq!(
        kernel.catalog(&Realm::Global)[0].state,
        ModuleState::Active { generation: 2 }
    );
}

#[tokio::test]
async fn project_graphs_are_created_lazily_with_project_capable_modules_only() {
    let user_only = module("user-only");
    let capable = module("capable")
        .project()
        .on_apply(|ctx| realm_answer(ctx, "capable.where", Visibility::Internal));
    let (user_applies, capable_applies) = (user_only.counter(), capable.counter());
    let kernel = kernel_with(vec![user_only.arc(), capable.arc()]).await;
    let a = project("/a");
    assert!(kernel.live_projects().is_empty());
    assert_eq!(kernel.catalog(&a)[0].state, ModuleState::Idle);
    assert_eq!(
        kernel.call(&a, "capable.where", Value::Null).await,
        Ok(json!("project `/a`"))
    );
    assert_eq!(kernel.live_projects(), [ProjectKey::new("/a")]);
    assert_eq!(
        (
            user_applies.load(Ordering::SeqCst),
            capable_applies.load(Ordering::SeqCst)
        ),
        (1, 2)
    );
    assert_eq!(
        kernel.catalog(&a)[0].state,
        ModuleState::Active { generation: 1 }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_reap_never_takes_a_leased_realm_under_concurrency() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let entered = Arc::new(AtomicUsize::new(0));
    let (g, e) = (gate.clone(), entered.clone());
    let slow = module("slow").project().on_apply(move |ctx| {
        let (gate, entered) = (g.clone(), e.clone());
        ctx.register_command(
            "slow.run",
            CommandSpec::new("slow"),
            command_handler(move |_, _| {
                let (gate, entered) = (gate.clone(), entered.clone());
                async move {
                    entered.fetch_add(1, Ordering::SeqCst);
                    gate.notified().await;
                    Ok(json!("done"))
                }
            }),
        )
    });
    let kernel = kernel_with(vec![slow.arc()]).await;
    let a = project("/a");
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let (kernel, a) = (kernel.clone(), a.clone());
            tokio::spawn(async move { kernel.call(&a, "slow.run", Value::Null).await })
        })
        .collect();
    let far_future = || Instant::now() + Duration::from_secs(3600);
    // Reap repeatedly while calls race in; a realm with a command in flight is never taken.
    while entered.load(Ordering::SeqCst) < 8 {
        let reaped = kernel
            .reap_idle(far_future(), Duration::from_secs(300))
            .await;
        // The realm only exists once a call has leased it, and no call can finish yet.
        assert!(reaped.is_empty(), "reaped a realm with calls in flight");
        tokio::task::yield_now().await;
    }
    assert!(
        kernel
            .reap_idle(far_future(), Duration::from_secs(300))
            .await
            .is_empty()
    );
    let resource = kernel.lease(&a).await.unwrap();
    while calls.iter().any(|c| !c.is_finished()) {
        gate.notify_waiters();
        tokio::task::yield_now().await;
    }
    for call in calls {
        assert_eq!(call.await.unwrap(), Ok(json!("done")));
    }
    assert!(
        kernel
            .reap_idle(far_future(), Duration::from_secs(300))
            .await
            .is_empty(),
        "the resource lease holds it"
    );
    drop(resource);
    assert!(
        kernel
            .reap_idle(Instant::now(), Duration::from_secs(300))
            .await
            .is_empty(),
        "not idle long enough"
    );
    assert_eq!(
        kernel
            .reap_idle(far_future(), Duration::from_secs(300))
            .await,
        [ProjectKey::new("/a")]
    );
    assert!(kernel.live_projects().is_empty());
    // The next call re-creates the realm lazily.
    let again = tokio::spawn({
        let (kernel, a) = (kernel.clone(), a.clone());
        async move { kernel.call(&a, "slow.run", Value::Null).await }
    });
    while !again.is_finished() {
        gate.notify_waiters();
        tokio::task::yield_now().await;
    }
    assert_eq!(again.await.unwrap(), Ok(json!("done")));
    assert_eq!(kernel.live_projects(), [ProjectKey::new("/a")]);
}

/// A module that takes a while to apply, so concurrent first callers of a realm overlap its
/// build: registers `who`, answering with the realm it was applied in.
struct SlowApply;

impl Module for SlowApply {
    fn name(&self) -> &str {
        "dual"
    }
    fn meta(&self) -> ModuleMeta {
        let mut meta = ModuleMeta::new(Role::BuiltIn, "c2", "test");
        meta.scopes = vec![ScopeKind::User, ScopeKind::Project];
        meta
    }
    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(3)).await;
            realm_answer(ctx, "who", Visibility::Internal)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_calls_to_a_project_realm_are_answered_by_that_realm_only() {
    let kernel = kernel_with(vec![Arc::new(SlowApply)]).await;
    let (projects, per_project) = (24, 8);
    let start = Arc::new(tokio::sync::Barrier::new(projects * per_project));
    let mut calls = Vec::new();
    for p in 0..projects {
        let realm = project(&format!("/p{p}"));
        for _ in 0..per_project {
            let (kernel, realm, start) = (kernel.clone(), realm.clone(), start.clone());
            calls.push(tokio::spawn(async move {
                start.wait().await;
                let answer = kernel.call(&realm, "who", Value::Null).await;
                (realm, answer)
            }));
        }
    }
    let mut wrong = Vec::new();
    for call in calls {
        let (realm, answer) = call.await.unwrap();
        if answer != Ok(json!(realm.to_string())) {
            wrong.push(format!("{realm}: {answer:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} calls answered by another realm: {wrong:?}",
        wrong.len(),
        projects * per_project
    );
    assert_eq!(kernel.live_projects().len(), projects);
    assert_eq!(
        kernel.call(&Realm::Global, "who", Value::Null).await,
        Ok(json!(Realm::Global.to_string()))
    );
}

#[tokio::test]
async fn a_call_whose_project_realm_was_unloaded_is_refused_not_answered_globally() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let g = gate.clone();
    struct Gated(Arc<tokio::sync::Semaphore>);
    impl Module for Gated {
        fn name(&self) -> &str {
            "gated"
        }
        fn meta(&self) -> ModuleMeta {
            let mut meta = ModuleMeta::new(Role::BuiltIn, "c2", "test");
            meta.scopes = vec![ScopeKind::User, ScopeKind::Project];
            meta
        }
        fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), Error>> {
            Box::pin(async move {
                if ctx.realm() != &Realm::Global {
                    // Held until the test lets the build finish.
                    self.0.acquire().await.expect("open").forget();
                }
                realm_answer(ctx, "who", Visibility::Internal)
            })
        }
    }
    let kernel = kernel_with(vec![Arc::new(Gated(g))]).await;
    let a = project("/a");
    // The first call builds the realm and is held inside apply, holding the graph lock.
    let first = tokio::spawn({
        let (kernel, a) = (kernel.clone(), a.clone());
        async move { kernel.call(&a, "who", Value::Null).await }
    });
    while kernel.live_projects().is_empty() {
        tokio::task::yield_now().await;
    }
    // The project is closed while the build runs: the unload queues behind it.
    let unload = tokio::spawn({
        let (kernel, key) = (kernel.clone(), ProjectKey::new("/a"));
        async move { kernel.unload_project(&key).await }
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // A second caller leases the realm being built, then waits behind the unload.
    let second = tokio::spawn({
        let (kernel, a) = (kernel.clone(), a.clone());
        async move { kernel.call(&a, "who", Value::Null).await }
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    gate.add_permits(1);
    assert!(unload.await.unwrap());
    // One thread and FIFO locks make the order exact: the builder answers from its realm,
    // the caller that waited behind the unload is refused instead of falling back to global.
    assert_eq!(first.await.unwrap(), Ok(json!(a.to_string())));
    assert!(
        matches!(second.await.unwrap(), Err(Error::ProjectUnloaded { .. })),
        "a call to an unloaded project realm must not be answered by the global realm"
    );
}

#[tokio::test]
async fn shutdown_disposes_everything() {
    let cleaned = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = cleaned.clone();
    let ext = module("bundle:x").project().on_apply(move |ctx| {
        let (log, realm) = (log.clone(), ctx.realm().to_string());
        ctx.on_cleanup(move || async move {
            tokio::task::yield_now().await;
            log.lock().unwrap().push(realm);
        })?;
        ctx.listen("tick", listener(|_| async {}))?;
        internal(ctx, "x.run", json!(1))
    });
    let kernel = kernel_with(vec![ext.arc()]).await;
    kernel
        .call(&project("/a"), "x.run", Value::Null)
        .await
        .unwrap();
    let host = kernel.open_scope(&Realm::Global, "host").unwrap();
    let log = cleaned.clone();
    host.on_cleanup(move || async move { log.lock().unwrap().push("host".to_owned()) })
        .unwrap();
    kernel.shutdown().await;
    assert_eq!(*cleaned.lock().unwrap(), ["project `/a`", "global", "host"]);
    assert_eq!((kernel.command_count(), kernel.scope_count()), (0, 0));
    assert_eq!(kernel.emit("tick", Value::Null), 0);
    assert_eq!(
        kernel.call(&Realm::Global, "x.run", Value::Null).await,
        Err(Error::ShutDown)
    );
    assert!(matches!(
        kernel.open_scope(&Realm::Global, "late"),
        Err(Error::ShutDown)
    ));
}

#[tokio::test]
async fn dispatch_by_a_stale_generation_is_refused() {
    let ext = module("bundle:x").on_apply(|ctx| internal(ctx, "x.run", json!(1)));
    let status = module("git").on_apply(|ctx| public(ctx, "git.status", json!("clean")));
    let kernel = kernel_with(vec![ext.arc(), status.arc()]).await;
    let old = kernel.module_scope(&Realm::Global, "bundle:x").unwrap();
    assert_eq!(
        kernel.call_as(&old, "git.status", Value::Null).await,
        Ok(json!("clean"))
    );

    kernel
        .set_desired(DesiredState::default().with("bundle:x", None, Some(json!({ "v": 2 }))))
        .unwrap();
    kernel.reconcile().await;
    let current = kernel.module_scope(&Realm::Global, "bundle:x").unwrap();
    assert_eq!((old.generation(), current.generation()), (1, 2));
    assert!(!old.is_current() && current.is_current());
    let stale = Error::StaleScope {
        module: "bundle:x".to_owned(),
        generation: 1,
    };
    assert_eq!(
        kernel.call_as(&old, "git.status", Value::Null).await,
        Err(stale.clone())
    );
    // Work started for the old generation (a lazy activation) cannot attach to the new one.
    assert_eq!(old.on_cleanup(|| async {}), Err(stale.clone()));
    assert!(matches!(old.child(), Err(Error::StaleScope { .. })));
    assert_eq!(
        kernel.call_as(&current, "git.status", Value::Null).await,
        Ok(json!("clean"))
    );
}

#[tokio::test]
async fn disposal_runs_children_first_and_cleanups_newest_first() {
    let order = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let kernel = Kernel::default();
    let root = kernel.open_scope(&Realm::Global, "host").unwrap();
    let child = root.child().unwrap();
    for (scope, label) in [(&root, "root-old"), (&child, "child"), (&root, "root-new")] {
        let order = order.clone();
        scope
            .on_cleanup(move || async move { order.lock().unwrap().push(label) })
            .unwrap();
    }
    child
        .register_command("child.run", CommandSpec::new("c"), answer(json!(1)))
        .unwrap();
    root.dispose().await;
    assert_eq!(*order.lock().unwrap(), ["child", "root-new", "root-old"]);
    assert!(!child.is_current());
    assert_eq!(kernel.command_count(), 0);
}

#[tokio::test]
async fn a_full_subscriber_queue_drops_and_counts_for_that_subscriber_only() {
    let kernel = Kernel::new(KernelOptions {
        event_queue_capacity: 2,
        ..KernelOptions::default()
    });
    let scope = kernel.open_scope(&Realm::Global, "host").unwrap();
    let mut slow = scope.subscribe("engine/event").unwrap();
    let mut fast = scope.subscribe("engine/event").unwrap();
    for n in 0..3 {
        kernel.emit("engine/event", json!(n));
        if let Some(event) = fast.try_recv() {
            assert_eq!(event.payload, json!(n));
        }
    }
    assert_eq!((slow.dropped(), fast.dropped()), (1, 0));
    assert_eq!(slow.recv().await.map(|e| e.payload), Some(json!(0)));
    scope.dispose().await;
    assert_eq!(
        slow.recv().await.map(|e| e.name),
        Some("engine/event".to_owned())
    );
    assert_eq!(slow.recv().await, None, "the stream ends with its scope");
}

#[derive(Clone, Debug, PartialEq)]
struct ConnectorEvent {
    bundle: String,
}

#[tokio::test]
async fn typed_events_stay_off_the_json_bus() {
    let kernel = Kernel::default();
    let scope = kernel.open_scope(&Realm::Global, "host").unwrap();
    let mut typed = scope.subscribe_typed::<ConnectorEvent>().unwrap();
    let mut json_side = scope.subscribe("connector/event").unwrap();
    assert_eq!(
        kernel.emit_typed(ConnectorEvent {
            bundle: "x".to_owned()
        }),
        1
    );
    assert_eq!(
        typed.recv().await,
        Some(ConnectorEvent {
            bundle: "x".to_owned()
        })
    );
    assert_eq!(json_side.try_recv(), None);
    assert_eq!(
        kernel.emit_typed(7_u32),
        0,
        "another type has its own subscribers"
    );
}

#[tokio::test]
async fn a_panicking_handler_fails_the_call_not_the_module() {
    let kernel = kernel_with(vec![
        module("m")
            .on_apply(|ctx| {
                ctx.register_command(
                    "m.boom",
                    CommandSpec::new("b"),
                    command_handler(|_, _| async { panic!("handler exploded") }),
                )
            })
            .arc(),
    ])
    .await;
    let error = kernel
        .call(&Realm::Global, "m.boom", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(error.code(), -32000);
    assert!(error.to_string().starts_with("m.boom: "), "{error}");
    assert_eq!(
        state_of(&kernel, &Realm::Global, "m"),
        ModuleState::Active { generation: 1 }
    );
}

#[tokio::test]
async fn disposing_many_scopes_removes_exactly_their_commands() {
    let kernel = Kernel::default();
    let handler = answer(Value::Null);
    let scopes: Vec<ScopeHandle> = (0..100)
        .map(|s| kernel.open_scope(&Realm::Global, format!("m{s}")).unwrap())
        .collect();
    for (s, scope) in scopes.iter().enumerate() {
        for c in 0..100 {
            scope
                .register_command(format!("m{s}.c{c}"), CommandSpec::new("c"), handler.clone())
                .unwrap();
        }
    }
    assert_eq!(kernel.command_count(), 10_000);
    for scope in scopes.iter().step_by(2) {
        scope.dispose().await;
    }
    assert_eq!(kernel.command_count(), 5_000);
    assert!(
        kernel
            .call(&Realm::Global, "m1.c99", Value::Null)
            .await
            .is_ok()
    );
    assert!(
        kernel
            .call(&Realm::Global, "m0.c0", Value::Null)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn withheld_parts_reach_apply_a_change_reloads_and_a_project_overrides_the_user() {
    let m = module("parts").project().on_apply(|ctx| {
        for part in ["a.run", "b.run"] {
            if !ctx.withheld().contains(part) {
                internal(ctx, part, json!(part))?;
            }
        }
        Ok(())
    });
    let applies = m.counter();
    let kernel = kernel_with(vec![m.arc()]).await;
    let withhold = |parts: &[&str]| {
        let mut state = DesiredState::default().with("parts", Some(true), None);
        if let Some(intent) = state.modules.get_mut("parts") {
            intent.withheld = Some(parts.iter().map(|p| (*p).to_owned()).collect());
        }
        state
    };
    kernel.set_desired(withhold(&["b.run"])).unwrap();
    kernel.reconcile().await;
    assert_eq!(
        kernel.call(&Realm::Global, "a.run", Value::Null).await,
        Ok(json!("a.run"))
    );
    assert!(matches!(
        kernel.call(&Realm::Global, "b.run", Value::Null).await,
        Err(Error::UnknownCommand { .. })
    ));
    let before = applies.load(Ordering::SeqCst);
    kernel.set_desired(withhold(&["b.run"])).unwrap();
    kernel.reconcile().await;
    assert_eq!(
        applies.load(Ordering::SeqCst),
        before,
        "same set, no reload"
    );

    // The project's own set wins over the user's; without one it inherits.
    kernel
        .set_project_desired(ProjectKey::new("p"), withhold(&["a.run"]))
        .unwrap();
    kernel.reconcile().await;
    let realm = project("p");
    assert_eq!(
        kernel.call(&realm, "b.run", Value::Null).await,
        Ok(json!("b.run"))
    );

    kernel.set_desired(withhold(&[])).unwrap();
    kernel.reconcile().await;
    assert!(
        applies.load(Ordering::SeqCst) > before,
        "a changed set reloads"
    );
    assert_eq!(
        kernel.call(&Realm::Global, "b.run", Value::Null).await,
        Ok(json!("b.run"))
    );
}
