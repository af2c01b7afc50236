//! The session's content library (plugin-standard §5; decisions.md, "The content library").
//!
//! [`Library::skill_library`] lists, for every bundle enabled in a realm, its skills
//! (`skills/<name>/SKILL.md`), its prompt commands compiled to the Skill fallback
//! (`commands/<name>.md`) and its subagents (`agents/<name>.md`), each with the name offered to
//! a session and a status: `supported`, `not_trusted` (a skill that ships scripts, of a bundle
//! whose content is not trusted), `disabled` (a per-component choice withholds it) or
//! `skipped` (invalid, or shadowed). Two bundles offering one name both get
//! `<bundle-name>:<name>` and the bare name is offered by neither. [`Library::scene_library`]
//! lists the scene and pipeline files of the same bundles, each checked as far as its
//! `version` and JSON shape allow.
//!
//! Files are read through c2-bundle-collector (it alone walks bundle trees), once per content
//! digest. After every reconcile the host compares a digest of each realm's library with the
//! last one and publishes `skills/changed` or `scenes/changed` (payload `null`) once when any
//! realm it already knew changed (`changed.rs`).

mod changed;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use c2_policy::Scope;
use serde::Serialize;

use c2_bundle_collector::{BundleLibrary as BundleContent, LibraryPart as RawItem};
pub use c2_bundle_collector::{LibraryKind, SceneKind, SceneStatus};
use c2_host::seam::{InstalledBundle, Registry, realm_scope};
use c2_host::{HostError, PluginHost, Target};
use c2_lock::lock;

/// The host event published when a realm's skill library changed.
pub const SKILLS_CHANGED: &str = "skills/changed";
/// The host event published when a realm's scene library changed.
pub const SCENES_CHANGED: &str = "scenes/changed";

/// Whether an item is offered to a session, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
#[non_exhaustive]
pub enum LibraryStatus {
    /// Offered under [`LibraryItem::name`].
    Supported,
    /// A skill that ships scripts, of a bundle whose content is not trusted.
    NotTrusted,
    /// A per-component choice withholds it in this realm.
    Disabled(String),
    /// Invalid, or shadowed by another item of the same bundle.
    Skipped(String),
}

impl LibraryStatus {
    /// `supported`, `not_trusted`, `disabled: <why>` or `skipped: <why>`.
    pub fn text(&self) -> String {
        match self {
            Self::Supported => "supported".to_owned(),
            Self::NotTrusted => "not_trusted".to_owned(),
            Self::Disabled(why) => format!("disabled: {why}"),
            Self::Skipped(why) => format!("skipped: {why}"),
        }
    }
}

/// One skill, prompt command or subagent of an enabled bundle, as a session composer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LibraryItem {
    /// The installed bundle id.
    pub bundle: String,
    /// The bundle's manifest name.
    pub bundle_name: String,
    /// What sort of item it is.
    pub kind: LibraryKind,
    /// The bundle-local name: the skill's folder, the file's stem.
    pub local_name: String,
    /// The name offered to a session: the local name, or `<bundle-name>:<local-name>` when
    /// another bundle offers the same name. `None` when the item is not offered.
    pub name: Option<String>,
    /// The frontmatter's `description`; for a prompt command without one, its first line.
    pub description: Option<String>,
    /// The item's file (SKILL.md or the `.md` file).
    pub path: PathBuf,
    /// The folder its resources are relative to.
    pub folder: PathBuf,
    /// The other scalar frontmatter fields (`argument-hint`, `model`, `tools`, `license`,
    /// ...), a block list joined with `, `.
    pub fields: BTreeMap<String, String>,
    /// `allowed-tools`, as a list.
    pub allowed_tools: Vec<String>,
    /// For a prompt command or a subagent, the body after the frontmatter, verbatim
    /// (`$ARGUMENTS` kept); a skill's instructions stay in its file.
    pub instructions: Option<String>,
    /// Whether the item's folder holds executable files (a skill's scripts).
    pub scripts: bool,
    /// Whether it is offered, and if not, why.
    pub status: LibraryStatus,
}

/// One scene or pipeline file of an enabled bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SceneEntry {
    /// The installed bundle id.
    pub bundle: String,
    /// The bundle's manifest name.
    pub bundle_name: String,
    /// Scene or pipeline.
    pub kind: SceneKind,
    /// The document's `name`, else the file's stem.
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// The document's `version`, when it has one.
    pub version: Option<String>,
    /// Whether it can be used.
    pub status: SceneStatus,
}

/// The contribution's state: what each bundle offers by content digest, and the last digest
/// of each realm's libraries.
#[derive(Debug, Default)]
pub(crate) struct LibraryState {
    content: Mutex<BTreeMap<String, (String, Arc<BundleContent>)>>,
    seen: Mutex<Option<changed::Seen>>,
}

/// Registers the library with a host that is opening: its cache, and the check after every
/// reconcile that publishes `skills/changed` and `scenes/changed`.
pub(crate) fn install(registry: &mut Registry<'_>) {
    registry.own(Arc::new(LibraryState::default()));
    registry.after_reconcile(changed::publish_changes);
}

/// The content library: the skills, prompt commands, subagents and scenes a session is offered.
/// Implemented for [`PluginHost`].
pub trait Library {
    /// The skills, prompt commands and subagents a session in `target` is offered, in bundle
    /// id order, then kind, then local name; every item of an enabled bundle appears, those not
    /// offered with the reason. Reads no process and starts nothing.
    fn skill_library(&self, target: &Target) -> Result<Vec<LibraryItem>, HostError>;

    /// The scene and pipeline files of the bundles enabled in `target`, each checked.
    fn scene_library(&self, target: &Target) -> Result<Vec<SceneEntry>, HostError>;
}

impl Library for PluginHost {
    fn skill_library(&self, target: &Target) -> Result<Vec<LibraryItem>, HostError> {
        self.seam().state::<LibraryState>()?;
        let scope = realm_scope(&self.seam().realm(target)?);
        Ok(library_in(self, &scope))
    }

    fn scene_library(&self, target: &Target) -> Result<Vec<SceneEntry>, HostError> {
        self.seam().state::<LibraryState>()?;
        let scope = realm_scope(&self.seam().realm(target)?);
        Ok(scenes_in(self, &scope))
    }
}

/// A bundle enabled in a realm, with the choices its library items depend on. What its files
/// offer is read when the offer is made only if its inventory lists something for the
/// library (its tree may be replaced before a later comparison needs the content); any other
/// bundle's folders are looked at only when something needs its items ([`Offer::content`]).
#[derive(Debug, Clone)]
pub(crate) struct Offer {
    bundle: Arc<InstalledBundle>,
    choice: Scope,
    withheld: BTreeSet<String>,
    trusted: bool,
    content: Option<Arc<BundleContent>>,
}

impl PartialEq for Offer {
    /// The same installed content under the same choices offers the same items.
    fn eq(&self, other: &Self) -> bool {
        self.bundle.record().id == other.bundle.record().id
            && self.bundle.record().digest == other.bundle.record().digest
            && self.choice == other.choice
            && self.withheld == other.withheld
            && self.trusted == other.trusted
    }
}

impl Offer {
    /// What the bundle's files offer, read once per content digest.
    fn content(&self, host: &PluginHost) -> Arc<BundleContent> {
        self.content
            .clone()
            .unwrap_or_else(|| bundle_content(host, &self.bundle))
    }
}

/// The bundles enabled in `scope`, in id order. Skills, commands and subagents are content,
/// not a process: a project's own entry counts only for a bundle whose runtime is
/// project-capable (as for MCP servers), otherwise the user's does.
pub(crate) fn offers(host: &PluginHost, scope: &Scope) -> Vec<Offer> {
    let mut bundles = host.seam().installed();
    bundles.sort_by(|a, b| a.record().id.cmp(&b.record().id));
    let scope_of = |b: &InstalledBundle| {
        if b.runtime_project_capable() {
            scope.clone()
        } else {
            Scope::User
        }
    };
    host.seam()
        .desired_bundles(bundles, scope_of, |d| d.enabled)
        .into_iter()
        .map(|bundle| {
            let choice = scope_of(&bundle);
            Offer {
                withheld: host.seam().withheld(&bundle, &choice),
                trusted: host.seam().is_trusted(&bundle),
                content: c2_bundle_collector::inventory_offers_library(&bundle.record().inventory)
                    .then(|| bundle_content(host, &bundle)),
                bundle,
                choice,
            }
        })
        .collect()
}

/// What `bundle` offers, read once per content digest.
fn bundle_content(host: &PluginHost, bundle: &InstalledBundle) -> Arc<BundleContent> {
    // Without the library's cache (a host opened without it), read it every time.
    let Ok(library) = host.seam().state::<LibraryState>() else {
        return Arc::new(read_content(host, bundle));
    };
    let id = &bundle.record().id;
    if let Some((digest, content)) = lock(&library.content).get(id)
        && *digest == bundle.record().digest
    {
        return Arc::clone(content);
    }
    let content = Arc::new(read_content(host, bundle));
    lock(&library.content).insert(
        id.clone(),
        (bundle.record().digest.clone(), Arc::clone(&content)),
    );
    content
}

/// What `bundle` offers: its library folders, once the tree is vouched for (or no walk).
fn read_content(host: &PluginHost, bundle: &InstalledBundle) -> BundleContent {
    use c2_bundle_collector::{LIBRARY_FOLDERS, read_library, read_parts};
    if !c2_bundle_collector::may_offer_library(&bundle.record().inventory, bundle.dir()) {
        return BundleContent::default();
    }
    if host.seam().verify_content(bundle).is_err() {
        return unreadable(bundle, "its files changed since it was installed");
    }
    let options = host.collect_options();
    match read_parts(bundle.dir(), options.limits, &LIBRARY_FOLDERS) {
        Ok(parts) if !parts.refused => read_library(&parts, &options.skills),
        Ok(_) => unreadable(bundle, "some of its files cannot be read"),
        Err(error) => unreadable(bundle, &format!("its files cannot be read: {error}")),
    }
}

pub(crate) fn library_in(host: &PluginHost, scope: &Scope) -> Vec<LibraryItem> {
    library_of(host, &offers(host, scope))
}

/// The skill library of the realm whose enabled bundles are `offers`.
pub(crate) fn library_of(host: &PluginHost, offers: &[Offer]) -> Vec<LibraryItem> {
    let mut items = Vec::new();
    for offer in offers {
        let (bundle, withheld) = (&offer.bundle, &offer.withheld);
        let mut skill_names = BTreeSet::new();
        for raw in &offer.content(host).items {
            let status = if let Some(why) = &raw.problem {
                LibraryStatus::Skipped(why.clone())
            } else if raw.kind == LibraryKind::Skill
                && withheld.contains(&format!("skill:{}", raw.local_name))
            {
                LibraryStatus::Disabled(format!(
                    "component skill:{} is disabled here",
                    raw.local_name
                ))
            } else if raw.kind == LibraryKind::PromptCommand
                && skill_names.contains(&raw.local_name)
            {
                LibraryStatus::Skipped(format!(
                    "skill {} of the same bundle has this name",
                    raw.local_name
                ))
            } else if raw.scripts && !offer.trusted {
                LibraryStatus::NotTrusted
            } else {
                LibraryStatus::Supported
            };
            if raw.kind == LibraryKind::Skill && raw.problem.is_none() {
                skill_names.insert(raw.local_name.clone());
            }
            items.push(item(bundle, raw, status));
        }
    }
    name_items(&mut items);
    items
}

pub(crate) fn scenes_in(host: &PluginHost, scope: &Scope) -> Vec<SceneEntry> {
    scenes_of(host, &offers(host, scope))
}

/// The scene library of the realm whose enabled bundles are `offers`.
pub(crate) fn scenes_of(host: &PluginHost, offers: &[Offer]) -> Vec<SceneEntry> {
    offers
        .iter()
        .flat_map(|offer| {
            let bundle = &offer.bundle;
            offer
                .content(host)
                .scenes
                .iter()
                .map(|raw| SceneEntry {
                    bundle: bundle.record().id.clone(),
                    bundle_name: bundle.manifest().name.clone(),
                    kind: raw.kind,
                    name: raw.name.clone(),
                    path: bundle.dir().join(&raw.path),
                    version: raw.version.clone(),
                    status: raw.status.clone(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn unreadable(bundle: &InstalledBundle, why: &str) -> BundleContent {
    tracing::warn!(bundle = %bundle.record().id, "the content library leaves the bundle out: {why}");
    BundleContent::unreadable(&bundle.record().inventory, why)
}

fn item(bundle: &InstalledBundle, raw: &RawItem, status: LibraryStatus) -> LibraryItem {
    LibraryItem {
        bundle: bundle.record().id.clone(),
        bundle_name: bundle.manifest().name.clone(),
        kind: raw.kind,
        local_name: raw.local_name.clone(),
        name: None,
        description: raw.description.clone(),
        path: bundle.dir().join(&raw.path),
        folder: bundle.dir().join(&raw.folder),
        fields: raw.fields.clone(),
        allowed_tools: raw.allowed_tools.clone(),
        instructions: raw.instructions.clone(),
        scripts: raw.scripts,
        status,
    }
}

/// Gives every supported item its offered name (decisions.md, "Names in the content
/// library"): the local name when no other bundle offers it in the same namespace, otherwise
/// `<bundle-name>:<local-name>` for each of them and the bare name for none; if two such
/// bundles share a manifest name, `<bundle-id>:<local-name>`.
pub(crate) fn name_items(items: &mut [LibraryItem]) {
    let mut offering: BTreeMap<(u8, &str), BTreeSet<&str>> = BTreeMap::new();
    let mut bundle_names: BTreeMap<(u8, &str, &str), BTreeSet<&str>> = BTreeMap::new();
    for it in items.iter() {
        if it.status == LibraryStatus::Supported {
            offering
                .entry((it.kind.namespace(), &it.local_name))
                .or_default()
                .insert(&it.bundle);
            bundle_names
                .entry((it.kind.namespace(), &it.local_name, &it.bundle_name))
                .or_default()
                .insert(&it.bundle);
        }
    }
    let names: Vec<Option<String>> = items
        .iter()
        .map(|it| {
            if it.status != LibraryStatus::Supported {
                return None;
            }
            let ns = it.kind.namespace();
            let shared = offering
                .get(&(ns, it.local_name.as_str()))
                .is_some_and(|b| b.len() > 1);
            if !shared {
                return Some(it.local_name.clone());
            }
            let same_name = bundle_names
                .get(&(ns, it.local_name.as_str(), it.bundle_name.as_str()))
                .is_some_and(|b| b.len() > 1);
            let prefix = if same_name {
                &it.bundle
            } else {
                &it.bundle_name
            };
            Some(format!("{prefix}:{}", it.local_name))
        })
        .collect();
    for (it, name) in items.iter_mut().zip(names) {
        it.name = name;
    }
}
