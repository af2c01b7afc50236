//! Many hosts, one store: a change committed by any process on the plugins directory (install,
//! uninstall, replace, trust, untrust, enable, disable, inherit, configure, reset) reaches this
//! host within a second, and the host reconciles exactly as if the change had been made through
//! it.
//!
//! The mechanism is c2-policy's: every commit bumps `store.generation`, and a
//! [`c2_policy::StoreWatch`] wakes this host (inotify, or a cheap poll without it). The host
//! then [`PluginHost::refresh`]es: it re-reads policy and the store, registers new or replaced
//! bundles, removes the factories of bundles that left the store, reconciles every realm (a
//! removed or no longer runnable bundle's processes and language servers stop) and publishes a
//! typed [`StoreChanged`] on the internal bus. A host that has a bundle loaded holds a
//! [`c2_bundle_collector::Lease`] on its tree, so another process's uninstall or replace deletes
//! the files only after this host let go of them.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use c2_policy::Scope;

use crate::bundle::module_name;
use crate::error::HostError;
use crate::host::{PluginHost, Shared, lock};
use crate::options::Loading;

/// What one refresh found changed in the store or its policy, published on the kernel's typed
/// internal bus (`Kernel::emit_typed`) so a frontend can redraw its plugin list. It is
/// published for changes made by this host too, since they are seen the same way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreChanged {
    /// The store generation the host is now at.
    pub generation: u64,
    /// The policy revision now in force (0 in safe mode or before the first change).
    pub policy_revision: u64,
    /// Bundles newly installed.
    pub installed: Vec<String>,
    /// Bundles that left the store.
    pub removed: Vec<String>,
    /// Bundles whose content was replaced.
    pub replaced: Vec<String>,
    /// Bundles whose user-scope trust or enablement changed.
    pub policy: Vec<String>,
}

impl StoreChanged {
    fn is_empty(&self) -> bool {
        self.installed.is_empty()
            && self.removed.is_empty()
            && self.replaced.is_empty()
            && self.policy.is_empty()
    }
}

/// What a host last showed: per bundle, its digest, trust and user enablement.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct View {
    bundles: BTreeMap<String, (String, bool, bool)>,
    policy_revision: u64,
    /// A commit of this host's own is not shown yet (see [`PluginHost::committed_own`]).
    behind: bool,
}

impl PluginHost {
    /// Looks at the store and its policy again now, without waiting for the watcher, and
    /// reconciles: what another process committed takes effect here as if it had been done
    /// through this host. Returns what changed since the host last looked (`None`: nothing).
    pub async fn refresh(&self) -> Result<Option<StoreChanged>, HostError> {
        let _changes = self.shared.changes.lock().await;
        self.refresh_locked().await
    }

    /// [`PluginHost::refresh`] only if the store generation moved; the entry points that act
    /// on an id call it first, so a change made elsewhere is never missed for want of a wake-up.
    pub(crate) async fn catch_up(&self) {
        if c2_policy::read_generation(&self.shared.options.plugins_dir)
            != self.shared.generation.load(Ordering::Acquire)
            || lock(&self.shared.view).behind
        {
            let _changes = self.shared.changes.lock().await;
            self.catch_up_locked().await;
        }
    }

    /// [`PluginHost::catch_up`] with `changes` held. When only this host's own commits moved
    /// the generation, nothing is read again: what they changed is published from memory.
    pub(crate) async fn catch_up_locked(&self) {
        let generation = c2_policy::read_generation(&self.shared.options.plugins_dir);
        if generation != self.shared.generation.load(Ordering::Acquire) {
            if let Err(error) = self.refresh_locked().await {
                tracing::warn!("cannot refresh from the store: {error}");
            }
        } else if lock(&self.shared.view).behind {
            self.publish_view(generation);
        }
    }

    /// Writes the planned change `id` to policy (see [`c2_policy::PolicyStore::apply_change`])
    /// and notes the generation it bumped as this host's own.
    pub(crate) fn commit_plan(
        &self,
        id: c2_policy::PlanId,
        revisions: &c2_policy::Revisions,
    ) -> Result<c2_policy::PendingCommit, HostError> {
        let mut policy = lock(&self.shared.policy);
        let commit = policy.apply_change(id, revisions, self.shared.options.clock.now())?;
        self.committed_own(policy.written_generation());
        Ok(commit)
    }

    /// This host's own commit moved the store generation to `generation`: if the host was
    /// current just before it, it is current now, and its next catch-up re-reads nothing and
    /// publishes the change from memory (the watcher's refresh would publish it too).
    pub(crate) fn committed_own(&self, generation: Option<u64>) {
        if let Some(generation) = generation {
            let before = generation.wrapping_sub(1);
            let current = &self.shared.generation;
            let swapped =
                current.compare_exchange(before, generation, Ordering::AcqRel, Ordering::Acquire);
            // Published at the next catch-up, as a refresh would have.
            lock(&self.shared.view).behind |= swapped.is_ok();
        }
    }

    /// The refresh itself. Call with `changes` held.
    pub(crate) async fn refresh_locked(&self) -> Result<Option<StoreChanged>, HostError> {
        let dir = &self.shared.options.plugins_dir;
        let generation = c2_policy::read_generation(dir);
        lock(&self.shared.policy).reload();
        let mut problems = Vec::new();
        let mut on_disk = BTreeMap::new();
        let listed = match self.shared.options.loading {
            Loading::All => self.shared.store.list()?,
            // Only what is loaded is looked at again (see `Loading::OnDemand`).
            Loading::OnDemand => {
                let ids: Vec<String> = lock(&self.shared.bundles).keys().cloned().collect();
                let mut listed = Vec::new();
                for id in ids {
                    if self.shared.store.contains(&id)? {
                        let record = self.shared.store.get(&id);
                        listed.push(c2_bundle_collector::ListedBundle { id, record });
                    }
                }
                listed
            }
        };
        for listed in listed {
            match listed.record {
                Ok(record) => {
                    on_disk.insert(listed.id, record);
                }
                Err(error) => problems.push(format!(
                    "installed bundle {} cannot be loaded: {error}",
                    listed.id
                )),
            }
        }
        let loaded: BTreeMap<String, String> = lock(&self.shared.bundles)
            .iter()
            .map(|(id, module)| (id.clone(), module.bundle().record.digest.clone()))
            .collect();
        for id in loaded.keys().filter(|id| !on_disk.contains_key(*id)) {
            // Gone from the store: its scopes are disposed by the reconcile below.
            if let Err(error) = self.shared.kernel.remove_factory(&module_name(id)) {
                tracing::warn!("cannot remove the factory of {id}: {error}");
            }
            self.shared.set_bundles(|bundles| bundles.remove(id));
        }
        for (id, record) in on_disk {
            if loaded.get(&id) != Some(&record.digest)
                && let Err(error) = self.load_bundle(record)
            {
                problems.push(format!("installed bundle {id} cannot be loaded: {error}"));
            }
        }
        *lock(&self.shared.load_problems) = problems;
        self.reconcile_locked().await;
        self.shared.generation.store(generation, Ordering::Release);
        Ok(self.publish_view(generation))
    }

    /// The current view, compared with the last one; publishes and returns the difference.
    pub(crate) fn publish_view(&self, generation: u64) -> Option<StoreChanged> {
        let view = self.view();
        let previous = std::mem::replace(&mut *lock(&self.shared.view), view.clone());
        let mut changed = StoreChanged {
            generation,
            policy_revision: view.policy_revision,
            ..StoreChanged::default()
        };
        for (id, (digest, trusted, enabled)) in &view.bundles {
            match previous.bundles.get(id) {
                None => changed.installed.push(id.clone()),
                Some((old, was_trusted, was_enabled)) => {
                    if old != digest {
                        changed.replaced.push(id.clone());
                    }
                    // A replacement may change trust too (an update drops the trust of
                    // changed content): it is both replaced and a policy change.
                    if (was_trusted, was_enabled) != (trusted, enabled) {
                        changed.policy.push(id.clone());
                    }
                }
            }
        }
        changed.removed = previous
            .bundles
            .keys()
            .filter(|id| !view.bundles.contains_key(*id))
            .cloned()
            .collect();
        if changed.is_empty() && previous.policy_revision == view.policy_revision {
            return None;
        }
        self.shared.kernel.emit_typed(changed.clone());
        Some(changed)
    }

    fn view(&self) -> View {
        let bundles = lock(&self.shared.bundles).clone();
        let catalog = self.desired_catalog();
        let blocked = self.shared.blocked();
        let policy = lock(&self.shared.policy);
        View {
            bundles: bundles
                .values()
                .map(|module| {
                    let bundle = module.bundle();
                    let name = bundle.module_name();
                    let trusted = policy
                        .document()
                        .and_then(|d| d.entry(name, &Scope::User))
                        .is_some_and(|e| e.is_trusted(&bundle.record.digest));
                    let enabled = !blocked.contains_key(name)
                        && policy
                            .desired(&catalog, name, &Scope::User)
                            .is_ok_and(|d| d.enabled);
                    (
                        bundle.record.id.clone(),
                        (bundle.record.digest.clone(), trusted, enabled),
                    )
                })
                .collect(),
            policy_revision: policy.revision(),
            behind: false,
        }
    }

    /// Starts the store watcher and the task that refreshes on its wake-ups.
    pub(crate) fn start_watch(&self) {
        let (wake, mut woken) = tokio::sync::mpsc::channel::<()>(1);
        let started = c2_policy::StoreWatch::start_with(
            &self.shared.options.plugins_dir,
            self.shared.options.policy.managed_policy.as_deref(),
            &self.shared.options.store_watch,
            move || {
                // A full channel already holds a wake-up: changes coalesce.
                let _ignored = wake.try_send(());
            },
        );
        match started {
            Ok(watch) => *lock(&self.shared.watch) = Some(watch),
            Err(error) => lock(&self.shared.load_problems).push(format!(
                "changes made by other processes are only seen on `refresh`: {error}"
            )),
        }
        let weak: Weak<Shared> = Arc::downgrade(&self.shared);
        let debounce = self.shared.options.refresh_debounce;
        tokio::spawn(async move {
            while woken.recv().await.is_some() {
                // One refresh for a burst of notifications (a change is several renames).
                tokio::time::sleep(debounce).await;
                while woken.try_recv().is_ok() {}
                let Some(shared) = weak.upgrade() else { break };
                if let Err(error) = (PluginHost { shared }).refresh().await {
                    tracing::warn!("cannot refresh from the store: {error}");
                }
            }
        });
    }

    /// Which mechanism tells this host about other processes' changes (`None` if none could
    /// be started; then only [`PluginHost::refresh`] and the entry points look again).
    pub fn watch_mode(&self) -> Option<c2_policy::WatchMode> {
        lock(&self.shared.watch)
            .as_ref()
            .map(c2_policy::StoreWatch::mode)
    }
}
