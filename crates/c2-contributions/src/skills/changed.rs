//! `skills/changed` and `scenes/changed`, published by the host itself exactly when a realm's
//! library changed.
//!
//! After every reconcile (each install, uninstall, update, switch, component choice, trust
//! change and each refresh after another process changed the store) the host hashes each known
//! realm's skill library and scene library and compares them with the previous hashes; a
//! project realm seen for the first time is compared with the user realm's previous hashes,
//! since until then it inherited the user's library. The first reconcile (at open) only records
//! the baseline. When any realm differs, the event is published once, with a `null` payload
//! (plugin protocol, "Events"), however many realms changed.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use c2_policy::Scope;
use serde::Serialize;
use serde_json::Value;

use c2_host::PluginHost;
use c2_lock::lock;

use super::{LibraryState, SCENES_CHANGED, SKILLS_CHANGED, enabled_content, library_of, scenes_of};

/// The hashes of each realm's skill and scene libraries, by realm (`user` or a project key).
pub(crate) type Seen = BTreeMap<String, (u64, u64)>;

/// The user realm's key in [`Seen`] (a project key is an absolute path, never this).
const USER: &str = "user";

fn hash_of<T: Serialize>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    serde_json::to_string(value)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// What the libraries of every known realm hash to now.
fn current(host: &PluginHost) -> Seen {
    let mut scopes = vec![(USER.to_owned(), Scope::User)];
    scopes.extend(
        host.seam()
            .known_projects()
            .into_iter()
            .map(|key| (key.clone(), Scope::Project(key))),
    );
    scopes
        .into_iter()
        .map(|(name, scope)| {
            let enabled = enabled_content(host, &scope);
            let skills = hash_of(&library_of(host, &enabled));
            let scenes = hash_of(&scenes_of(&enabled));
            (name, (skills, scenes))
        })
        .collect()
}

/// Which libraries changed between `before` and `now`. A project realm `before` did not know
/// had, until now, exactly the user's library (a project without entries of its own inherits
/// every choice), so it is compared with the user realm's previous hashes.
pub(crate) fn changes(before: &Seen, now: &Seen) -> (bool, bool) {
    let mut skills = false;
    let mut scenes = false;
    for (realm, (new_skills, new_scenes)) in now {
        let Some((old_skills, old_scenes)) = before.get(realm).or_else(|| before.get(USER)) else {
            continue;
        };
        skills |= old_skills != new_skills;
        scenes |= old_scenes != new_scenes;
    }
    (skills, scenes)
}

/// The after-reconcile hook: publishes each event once when its library changed.
pub(crate) fn publish_changes(host: &PluginHost) {
    let Ok(library) = host.seam().state::<LibraryState>() else {
        return;
    };
    // What an uninstalled bundle offered is forgotten.
    let installed: std::collections::BTreeSet<String> = host
        .seam()
        .installed()
        .iter()
        .map(|b| b.record().id.clone())
        .collect();
    lock(&library.content).retain(|id, _| installed.contains(id));
    let now = current(host);
    let (skills, scenes) = {
        let mut seen = lock(&library.seen);
        let changed = seen
            .as_ref()
            .map_or((false, false), |before| changes(before, &now));
        *seen = Some(now);
        changed
    };
    if skills {
        tracing::debug!("the skill library changed");
        host.kernel().emit(SKILLS_CHANGED, Value::Null);
    }
    if scenes {
        tracing::debug!("the scene library changed");
        host.kernel().emit(SCENES_CHANGED, Value::Null);
    }
}
