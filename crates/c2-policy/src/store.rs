use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::catalog::Catalog;
use crate::deny::{DenyEntry, DenyKind, DenyLists};
use crate::document::{DesiredState, PolicyDocument, Scope};
use crate::error::{Error, RevisionKind};
use crate::fsio;
use crate::plan::{self, Change, Impact, Plan, PlanId, RecordedRevisions, Revisions};

/// The policy in force, inside the plugins directory.
pub const PRIMARY_FILE: &str = "policy.json";
/// The snapshot last confirmed good, inside the plugins directory.
pub const LAST_GOOD_FILE: &str = "policy.last-good.json";
/// The lock file that serializes writers across processes, inside the plugins directory.
pub const LOCK_FILE: &str = "policy.lock";

/// Limits of one store; defaults from decisions.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOptions {
    /// How long a plan may wait to be applied.
    pub plan_ttl: Duration,
    /// Plans outstanding at once; expired ones are dropped before a new one is refused.
    pub max_outstanding_plans: usize,
    /// The managed policy file (deny entries the user cannot remove, allow lists of sources),
    /// set by the embedder; `None`: there is none. A missing file is an empty one.
    pub managed_policy: Option<PathBuf>,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        Self {
            plan_ttl: Duration::from_secs(10 * 60),
            max_outstanding_plans: 64,
            managed_policy: None,
        }
    }
}

/// Which file the current policy came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadSource {
    /// Neither file exists: a first start, with the empty policy.
    Default,
    /// `policy.json` was read and is in force.
    Primary,
    /// The primary was missing or unusable; the snapshot last confirmed good is in force.
    LastKnownGood,
    /// Both files are unusable: only essential modules and what they require are desired.
    SafeMode,
}

/// Something the host should show the user about the state of the stored policy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Diagnostic {
    /// `policy.json` exists but cannot be used.
    PrimaryUnusable {
        /// Its path.
        path: PathBuf,
        /// Why (unreadable, not JSON, wrong schema version, ...).
        reason: String,
    },
    /// `policy.last-good.json` exists but cannot be used.
    LastKnownGoodUnusable {
        /// Its path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The last-known-good snapshot is in force instead of the primary.
    FellBackToLastKnownGood {
        /// The snapshot's revision.
        revision: u64,
    },
    /// Neither file is usable: only essential modules run until a reset.
    EnteredSafeMode,
    /// An unusable primary was renamed before being replaced, so the evidence survives.
    EvidenceKept {
        /// Where the unusable file now is.
        path: PathBuf,
    },
}

/// A written change that awaits the host's verdict: `confirm` or `rollback`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCommit {
    /// The revision now in `policy.json`.
    pub revision: u64,
    /// What the host must bring about before confirming.
    pub impact: Impact,
}

#[derive(Debug)]
struct Loaded {
    /// `None` in safe mode.
    document: Option<PolicyDocument>,
    source: LoadSource,
    diagnostics: Vec<Diagnostic>,
    /// The highest revision any file claims, even an unusable one, so revisions never repeat.
    revision_floor: u64,
}

#[derive(Debug)]
struct StoredPlan {
    plan: Plan,
    after: PolicyDocument,
}

#[derive(Debug)]
struct Pending {
    commit: PendingCommit,
    /// The committed document as written to `policy.json`: what `confirm` makes last-good.
    written: Vec<u8>,
    /// `None` after a reset out of safe mode: there is no usable policy to go back to.
    previous: Option<PolicyDocument>,
}

/// The policy of one plugins directory: loads with recovery, plans, applies, confirms.
#[derive(Debug)]
pub struct PolicyStore {
    dir: PathBuf,
    options: PolicyOptions,
    loaded: Loaded,
    plans: BTreeMap<PlanId, StoredPlan>,
    next_plan: u64,
    pending: Option<Pending>,
    deny: DenyLists,
    /// The store generation this store's last write of `policy.json` produced.
    written_generation: Option<u64>,
    /// What `loaded` is known to reflect: the store generation and the primary file's stamp,
    /// both taken before the files were read (every write of policy bumps the generation after
    /// writing), or right after this store's own write.
    loaded_at: Option<(u64, FileStamp)>,
}

impl PolicyStore {
    /// Loads the policy of `plugins_dir`. Never fails on file contents: unusable files show up
    /// as diagnostics, a fallback to last-known-good, or safe mode. Reading never writes.
    pub fn open(plugins_dir: impl Into<PathBuf>, options: PolicyOptions) -> Self {
        let dir = plugins_dir.into();
        let loaded_at = Some(current_at(&dir));
        let loaded = load(&dir);
        let deny = DenyLists::load(&dir, options.managed_policy.as_deref());
        Self {
            dir,
            options,
            loaded,
            plans: BTreeMap::new(),
            next_plan: 1,
            pending: None,
            deny,
            written_generation: None,
            loaded_at,
        }
    }

    /// Reads the files again, e.g. after another process changed them.
    pub fn reload(&mut self) -> &[Diagnostic] {
        self.loaded_at = Some(current_at(&self.dir));
        self.loaded = load(&self.dir);
        self.deny = DenyLists::load(&self.dir, self.options.managed_policy.as_deref());
        &self.loaded.diagnostics
    }

    /// The deny lists and managed allow lists as last loaded (see [`PolicyStore::reload`]).
    pub fn deny_lists(&self) -> &DenyLists {
        &self.deny
    }

    /// Adds `entry` to the user's deny list (atomically, under the lock; every live host
    /// applies it within a second). Returns false when that kind and value were already listed
    /// (the reason is replaced). Allowed in safe mode: a kill switch must always work.
    pub fn block(&mut self, entry: DenyEntry) -> Result<bool, Error> {
        let added = crate::deny::block(&self.dir, entry)?;
        self.reload();
        Ok(added)
    }

    /// Removes the user's deny entry of `kind` and `value`; an entry of the managed policy
    /// file is refused ([`Error::ManagedEntry`]), one not listed is [`Error::NotDenied`].
    pub fn unblock(&mut self, kind: DenyKind, value: &str) -> Result<DenyEntry, Error> {
        let removed = crate::deny::unblock(
            &self.dir,
            self.options.managed_policy.as_deref(),
            kind,
            value,
        )?;
        self.reload();
        Ok(removed)
    }

    /// Where `policy.json` is.
    pub fn primary_path(&self) -> PathBuf {
        self.dir.join(PRIMARY_FILE)
    }

    /// Where `policy.last-good.json` is.
    pub fn last_good_path(&self) -> PathBuf {
        self.dir.join(LAST_GOOD_FILE)
    }

    /// Whether both files are unusable and only essential modules are desired.
    pub fn is_safe_mode(&self) -> bool {
        self.loaded.source == LoadSource::SafeMode
    }

    /// Which file the policy in force came from.
    pub fn source(&self) -> LoadSource {
        self.loaded.source
    }

    /// What loading found wrong with the files, for the user.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.loaded.diagnostics
    }

    /// The policy in force; `None` in safe mode.
    pub fn document(&self) -> Option<&PolicyDocument> {
        self.loaded.document.as_ref()
    }

    /// The store generation ([`crate::read_generation`]) that this store's last write of
    /// `policy.json` bumped the counter to; `None` before it wrote. A host whose own view was
    /// at the generation before it knows that nothing but its own write happened since.
    pub fn written_generation(&self) -> Option<u64> {
        self.written_generation
    }

    /// This process bumped the store generation to `generation` for a change of its own that
    /// is not a policy write (an install or uninstall): when the loaded policy reflected the
    /// generation just before, it still reflects this one, and the next write need not read
    /// the files again.
    pub fn note_store_write(&mut self, generation: u64) {
        if let Some((loaded, stamp)) = self.loaded_at.take() {
            let still = loaded == generation.wrapping_sub(1);
            self.loaded_at = Some((if still { generation } else { loaded }, stamp));
        }
    }

    /// The config revision: that of the document in force (0 in safe mode or on first start).
    pub fn revision(&self) -> u64 {
        self.loaded
            .document
            .as_ref()
            .map_or(0, |document| document.revision)
    }

    /// The applied change awaiting confirm or rollback, if any.
    pub fn pending(&self) -> Option<&PendingCommit> {
        self.pending.as_ref().map(|pending| &pending.commit)
    }

    /// The outstanding plan `id`, if it has not been applied or dropped.
    pub fn plan(&self, id: PlanId) -> Option<&Plan> {
        self.plans.get(&id).map(|stored| &stored.plan)
    }

    /// What the host should make true for `module` in `scope`. In safe mode only essential
    /// modules and their required closure are enabled, with no trust and no configuration.
    pub fn desired(
        &self,
        catalog: &Catalog,
        module: &str,
        scope: &Scope,
    ) -> Result<DesiredState, Error> {
        let entry = catalog
            .get(module)
            .ok_or_else(|| Error::UnknownModule(module.to_owned()))?;
        Ok(match &self.loaded.document {
            Some(document) => document.resolve(entry, scope),
            None => DesiredState {
                enabled: catalog.essential_closure().contains(module),
                trusted: entry.digest.is_none(),
                config: None,
                components: BTreeMap::new(),
            },
        })
    }

    /// Validates `change` and records a single-use plan bound to every revision it depends on.
    pub fn plan_change(
        &mut self,
        change: Change,
        catalog: &Catalog,
        revisions: &Revisions,
        now: Instant,
    ) -> Result<Plan, Error> {
        let document = self.loaded.document.as_ref().ok_or(Error::SafeMode)?;
        self.plans.retain(|_, stored| stored.plan.expires_at > now);
        if self.plans.len() >= self.options.max_outstanding_plans {
            return Err(Error::TooManyPlans {
                limit: self.options.max_outstanding_plans,
            });
        }
        let (after, impact) = plan::evaluate(document, &change, catalog)?;
        let project = match &change.scope {
            Scope::User => None,
            Scope::Project(key) => Some(revisions.project(key)),
        };
        let plan = Plan {
            id: PlanId(self.next_plan),
            revisions: RecordedRevisions {
                graph: revisions.graph,
                config: document.revision,
                project,
            },
            change,
            impact,
            // An absurd ttl must not panic: it only has to outlive any realistic session.
            expires_at: now
                .checked_add(self.options.plan_ttl)
                .or_else(|| now.checked_add(Duration::from_secs(365 * 24 * 3600)))
                .unwrap_or(now),
        };
        self.next_plan = self.next_plan.wrapping_add(1);
        self.plans.insert(
            plan.id,
            StoredPlan {
                plan: plan.clone(),
                after,
            },
        );
        Ok(plan)
    }

    /// Writes a planned change, once, while every revision it recorded is still current.
    /// The plan is used up by the attempt, whatever its outcome.
    pub fn apply_change(
        &mut self,
        id: PlanId,
        revisions: &Revisions,
        now: Instant,
    ) -> Result<PendingCommit, Error> {
        if let Some(pending) = &self.pending {
            return Err(Error::CommitPending(pending.commit.revision));
        }
        let StoredPlan { plan, after } = self.plans.remove(&id).ok_or(Error::UnknownPlan(id))?;
        if now >= plan.expires_at {
            return Err(Error::PlanExpired(id));
        }
        let _lock = fsio::lock(&self.dir)?;
        // Every write of policy bumps the store generation under this lock: while it is still
        // the one the loaded policy reflects and the primary file is the one read (a hand edit
        // in place changes its times), the files hold what is loaded and are not read again.
        let now = current_at(&self.dir);
        if self.loaded_at.as_ref() != Some(&now) {
            self.loaded = load(&self.dir);
            self.loaded_at = Some(now);
        }
        let current = self.loaded.document.as_ref().ok_or(Error::SafeMode)?;
        let recorded = &plan.revisions;
        check(RevisionKind::Config, recorded.config, current.revision)?;
        check(RevisionKind::Graph, recorded.graph, revisions.graph)?;
        if let (Some(planned), Scope::Project(key)) = (recorded.project, &plan.change.scope) {
            check(RevisionKind::Project, planned, revisions.project(key))?;
        }
        // Taken, not cloned: the write below replaces the loaded document (its revision floor
        // already covers the one taken).
        let previous = self.loaded.document.take().unwrap_or_default();
        let (revision, written) = match self.write_primary(after) {
            Ok(written) => written,
            Err(error) => {
                self.loaded.document = Some(previous);
                return Err(error);
            }
        };
        let commit = PendingCommit {
            revision,
            impact: plan.impact,
        };
        self.pending = Some(Pending {
            commit: commit.clone(),
            written,
            previous: Some(previous),
        });
        Ok(commit)
    }

    /// The host reached the runtime state of `revision`: it becomes last-known-good, unless
    /// another process has meanwhile confirmed a newer revision, which is kept.
    pub fn confirm(&mut self, revision: u64) -> Result<(), Error> {
        let pending = self.take_pending(revision)?;
        let _lock = fsio::lock(&self.dir)?;
        let path = self.last_good_path();
        // A newer revision needs a newer write of policy, which bumps the generation: while the
        // loaded policy reflects it, there is none to look for.
        let generation = crate::watch::read_generation(&self.dir);
        let moved = self.loaded_at.as_ref().map(|(loaded, _)| *loaded) != Some(generation);
        if moved
            && let FileState::Usable(newer) = read_document(&path)
            && newer.revision > revision
        {
            return Ok(());
        }
        fsio::write_atomic(&path, &pending.written)
    }

    /// The host could not reach the runtime state of `revision`: the previous policy is written
    /// back under a new, higher revision (revisions never repeat, so plans made against the
    /// failed revision stay stale). Last-known-good is left untouched. Returns the new revision.
    pub fn rollback(&mut self, revision: u64) -> Result<u64, Error> {
        let pending = self.take_pending(revision)?;
        let previous = pending.previous.ok_or(Error::NothingToRollBack(revision))?;
        let _lock = fsio::lock(&self.dir)?;
        self.loaded = load(&self.dir);
        Ok(self.write_primary(previous)?.0)
    }

    /// Recovery: clears one module's policy in every scope (`Some`), or all policy (`None`).
    /// Clearing all always writes a fresh document and so leaves safe mode, even when the
    /// policy in force was already empty. Any plan or pending commit is superseded.
    /// Returns the new revision, which the host confirms or rolls back like an applied change.
    pub fn reset(&mut self, module: Option<&str>) -> Result<u64, Error> {
        let _lock = fsio::lock(&self.dir)?;
        self.loaded = load(&self.dir);
        let previous = self.loaded.document.clone();
        let document = match (module, &previous) {
            (None, _) => PolicyDocument::default(),
            (Some(module), Some(document)) => {
                let mut document = document.clone();
                document.forget(module);
                document
            }
            (Some(_), None) => return Err(Error::SafeMode),
        };
        self.plans.clear();
        self.pending = None;
        let (revision, written) = self.write_primary(document)?;
        self.pending = Some(Pending {
            commit: PendingCommit {
                revision,
                impact: Impact::default(),
            },
            written,
            previous,
        });
        Ok(revision)
    }

    fn take_pending(&mut self, revision: u64) -> Result<Pending, Error> {
        match self.pending.take() {
            Some(pending) if pending.commit.revision == revision => Ok(pending),
            other => {
                self.pending = other;
                Err(Error::NoPendingCommit(revision))
            }
        }
    }

    /// Writes `document` as the primary under the next revision; the caller holds the lock and
    /// has just reloaded. An unusable primary is moved aside first, never overwritten.
    /// Returns the new revision and the bytes written.
    fn write_primary(&mut self, mut document: PolicyDocument) -> Result<(u64, Vec<u8>), Error> {
        let current = self
            .loaded
            .document
            .as_ref()
            .map_or(0, |document| document.revision);
        // Saturating: only a hand-edited file can get near the end of u64.
        document.revision = current.max(self.loaded.revision_floor).saturating_add(1);
        let primary = self.primary_path();
        let mut diagnostics = Vec::new();
        let primary_unusable = self
            .loaded
            .diagnostics
            .iter()
            .any(|diagnostic| matches!(diagnostic, Diagnostic::PrimaryUnusable { .. }));
        if primary_unusable && primary.exists() {
            diagnostics.push(Diagnostic::EvidenceKept {
                path: fsio::move_aside(&primary)?,
            });
        }
        let written = encode(&document)?;
        fsio::write_atomic(&primary, &written)?;
        // Other hosts on this directory learn of the change from the generation.
        let generation = crate::watch::bump_generation_locked(&self.dir)?;
        self.written_generation = Some(generation);
        self.loaded_at = Some((generation, file_stamp(&primary)));
        let revision = document.revision;
        self.loaded = Loaded {
            document: Some(document),
            source: LoadSource::Primary,
            diagnostics,
            revision_floor: revision,
        };
        Ok((revision, written))
    }
}

/// A file's inode, size, mtime and ctime (`None`: it cannot be looked at): what changes when
/// it is replaced or written in place.
type FileStamp = Option<(u64, u64, (i64, i64), (i64, i64))>;

fn file_stamp(path: &Path) -> FileStamp {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((
        meta.ino(),
        meta.size(),
        (meta.mtime(), meta.mtime_nsec()),
        (meta.ctime(), meta.ctime_nsec()),
    ))
}

/// The store generation and the primary file's stamp now; taken before the files are read.
fn current_at(dir: &Path) -> (u64, FileStamp) {
    (
        crate::watch::read_generation(dir),
        file_stamp(&dir.join(PRIMARY_FILE)),
    )
}

fn check(kind: RevisionKind, planned: u64, current: u64) -> Result<(), Error> {
    if planned == current {
        Ok(())
    } else {
        Err(Error::StalePlan {
            kind,
            planned,
            current,
        })
    }
}

fn encode(document: &PolicyDocument) -> Result<Vec<u8>, Error> {
    let mut bytes = serde_json::to_vec_pretty(document).map_err(Error::Encode)?;
    bytes.push(b'\n');
    Ok(bytes)
}

enum FileState {
    Missing,
    Usable(PolicyDocument),
    Unusable {
        reason: String,
        claimed_revision: Option<u64>,
    },
}

fn read_document(path: &Path) -> FileState {
    match fsio::read(path) {
        fsio::Read::Missing => FileState::Missing,
        fsio::Read::Unreadable(reason) => FileState::Unusable {
            reason,
            claimed_revision: None,
        },
        fsio::Read::Bytes(bytes) => match PolicyDocument::from_slice(&bytes) {
            Ok(document) => FileState::Usable(document),
            Err(reason) => FileState::Unusable {
                reason,
                claimed_revision: serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|value| value.get("revision")?.as_u64()),
            },
        },
    }
}

fn load(dir: &Path) -> Loaded {
    let primary_path = dir.join(PRIMARY_FILE);
    let last_good_path = dir.join(LAST_GOOD_FILE);
    let primary = read_document(&primary_path);
    let last_good = read_document(&last_good_path);
    let mut diagnostics = Vec::new();
    let mut revision_floor = 0;
    for (state, path, primary) in [
        (&primary, &primary_path, true),
        (&last_good, &last_good_path, false),
    ] {
        match state {
            FileState::Usable(document) => revision_floor = revision_floor.max(document.revision),
            FileState::Unusable {
                reason,
                claimed_revision,
            } => {
                revision_floor = revision_floor.max(claimed_revision.unwrap_or(0));
                let (path, reason) = (path.clone(), reason.clone());
                diagnostics.push(if primary {
                    Diagnostic::PrimaryUnusable { path, reason }
                } else {
                    Diagnostic::LastKnownGoodUnusable { path, reason }
                });
            }
            FileState::Missing => {}
        }
    }
    let (document, source) = match (primary, last_good) {
        (FileState::Usable(document), _) => (Some(document), LoadSource::Primary),
        (FileState::Missing, FileState::Missing) => {
            (Some(PolicyDocument::default()), LoadSource::Default)
        }
        (_, FileState::Usable(document)) => {
            tracing::warn!(
                revision = document.revision,
                "primary policy unusable, using last-known-good"
            );
            diagnostics.push(Diagnostic::FellBackToLastKnownGood {
                revision: document.revision,
            });
            (Some(document), LoadSource::LastKnownGood)
        }
        _ => {
            tracing::warn!(dir = %dir.display(), "policy files unusable, entering safe mode");
            diagnostics.push(Diagnostic::EnteredSafeMode);
            (None, LoadSource::SafeMode)
        }
    };
    Loaded {
        document,
        source,
        diagnostics,
        revision_floor,
    }
}
