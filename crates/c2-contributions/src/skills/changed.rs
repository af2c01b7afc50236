//! `skills/changed` and `scenes/changed`, published by the host itself exactly when a realm's
//! library changed.
//!
//! After every reconcile (each install, uninstall, update, switch, component choice, trust
//! change and each refresh after another process changed the store) the host takes what each
//! known realm's libraries are made of: its enabled bundles, by installed id and content
//! digest, with the choices their items depend on ([`Offer`]). Where a realm's offers differ
//! from the last ones, its skill and scene libraries before and after are built and compared;
//! a project realm seen for the first time is compared with the user realm's previous offers,
//! since until then it inherited the user's library. The first reconcile (at open) only
//! records the offers, reading no tree whose inventory lists nothing for the library, so a
//! host that opens and exits looks into no such tree. When any realm's library differs, the
//! event is published once, with a `null` payload (plugin protocol, "Events"), however many
//! realms changed.

use std::collections::BTreeMap;

use c2_policy::Scope;
use serde_json::Value;

use c2_host::PluginHost;
use c2_lock::lock;

use super::{LibraryState, Offer, SCENES_CHANGED, SKILLS_CHANGED, library_of, offers, scenes_of};

/// The offers of each realm's libraries, by realm (`user` or a project key).
pub(crate) type Seen = BTreeMap<String, Vec<Offer>>;

/// The user realm's key in [`Seen`] (a project key is an absolute path, never this).
const USER: &str = "user";

/// What the libraries of every known realm are made of now.
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
        .map(|(name, scope)| (name, offers(host, &scope)))
        .collect()
}

/// Which libraries changed between `before` and `now`. A project realm `before` did not know
/// had, until now, exactly the user's library (a project without entries of its own inherits
/// every choice), so it is compared with the user realm's previous offers. Libraries are built
/// only for realms whose offers differ.
fn changes(host: &PluginHost, before: &Seen, now: &Seen) -> (bool, bool) {
    let mut skills = false;
    let mut scenes = false;
    for (realm, offers) in now {
        let Some(old) = before.get(realm).or_else(|| before.get(USER)) else {
            continue;
        };
        if old == offers {
            continue;
        }
        skills |= library_of(host, old) != library_of(host, offers);
        scenes |= scenes_of(host, old) != scenes_of(host, offers);
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
    let before = lock(&library.seen).take();
    let (skills, scenes) = before.map_or((false, false), |before| changes(host, &before, &now));
    *lock(&library.seen) = Some(now);
    if skills {
        tracing::debug!("the skill library changed");
        host.kernel().emit(SKILLS_CHANGED, Value::Null);
    }
    if scenes {
        tracing::debug!("the scene library changed");
        host.kernel().emit(SCENES_CHANGED, Value::Null);
    }
}
