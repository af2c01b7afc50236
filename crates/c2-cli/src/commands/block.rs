//! `block`, `unblock` and `block --list`: the user's deny list, kept by c2-policy in the
//! plugins directory beside the policy. Every live host on the store applies a change within
//! a second (a blocked bundle is stopped and shown as `blocked`); installs and updates of a
//! matching bundle are refused. The managed policy file (`$C2_PLUGINS_MANAGED_POLICY`) is read,
//! never written.

use std::path::{Path, PathBuf};

use c2_policy::{DenyEntry, DenyKind, DenyLists, PolicyOptions, PolicyStore};
use serde_json::json;

use crate::CmdResult;
use crate::output::{Failure, Out};

/// The variable that names the managed policy file (deny entries and allow lists the user
/// cannot change); unset or empty: there is none.
pub(crate) const MANAGED_POLICY_VAR: &str = "C2_PLUGINS_MANAGED_POLICY";

/// `$C2_PLUGINS_MANAGED_POLICY`, when set.
pub(crate) fn managed_policy() -> Option<PathBuf> {
    std::env::var_os(MANAGED_POLICY_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `block [KIND] VALUE [--reason TEXT]` or `block --list`.
#[derive(Debug, clap::Args)]
pub(crate) struct BlockArgs {
    /// digest, id, name, source or publisher; with VALUE alone the kind is read from it (an
    /// installed id, a content digest, a path or URL, else a bundle name)
    #[arg(value_name = "KIND", required_unless_present = "list")]
    first: Option<String>,
    /// What the entry matches
    #[arg(value_name = "VALUE")]
    second: Option<String>,
    /// Why it is blocked, shown wherever the entry matches
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// List the deny entries (managed and the user's) and the managed allow lists
    #[arg(long, conflicts_with_all = ["first", "second", "reason"])]
    list: bool,
}

/// `unblock [KIND] VALUE`.
#[derive(Debug, clap::Args)]
pub(crate) struct UnblockArgs {
    /// digest, id, name, source or publisher (as for `block`)
    #[arg(value_name = "KIND")]
    first: String,
    /// The value the entry was blocked with
    #[arg(value_name = "VALUE")]
    second: Option<String>,
}

fn store(plugins_dir: Option<&Path>) -> Result<PolicyStore, Failure> {
    let dir = super::plugins_dir(plugins_dir)?;
    let options = PolicyOptions {
        managed_policy: managed_policy(),
        ..PolicyOptions::default()
    };
    Ok(PolicyStore::open(dir, options))
}

/// The kind and value of `KIND VALUE`, or of `VALUE` alone.
fn entry_of(
    plugins_dir: Option<&Path>,
    first: &str,
    second: Option<&str>,
) -> Result<(DenyKind, String), Failure> {
    if let Some(value) = second {
        let kind = DenyKind::from_name(first).ok_or_else(|| {
            let kinds: Vec<&str> = DenyKind::ALL.iter().map(|k| k.as_str()).collect();
            Failure::environment(
                "invalid_args",
                format!(
                    "`{first}` is not a deny kind; use one of {}",
                    kinds.join(", ")
                ),
            )
        })?;
        return Ok((kind, value.to_owned()));
    }
    let installed = super::plugins_dir(plugins_dir)
        .ok()
        .and_then(|dir| super::open_existing(&dir).ok().flatten())
        .and_then(|store| store.list().ok())
        .is_some_and(|listed| listed.iter().any(|b| b.id == first));
    let kind = if installed {
        DenyKind::Id
    } else if first.len() == 64 && first.bytes().all(|b| b.is_ascii_hexdigit()) {
        DenyKind::Digest
    } else if first.contains('/') || first.contains('\\') {
        DenyKind::Source
    } else {
        DenyKind::Name
    };
    Ok((kind, first.to_owned()))
}

/// A c2-policy failure of a block or unblock, with its kind and the policy's own hint.
fn failure(error: c2_policy::Error) -> Failure {
    use c2_policy::Error;
    let message = error.to_string();
    let hint = error.hint().map(str::to_owned);
    let mut failure = match &error {
        Error::InvalidDenyEntry { .. } => Failure::operation("invalid_deny_entry", message),
        Error::ManagedEntry { .. } => Failure::operation("managed_entry", message),
        Error::NotDenied(_) => Failure::operation("not_blocked", message),
        Error::UnusableList { .. } => Failure::environment("unusable_deny_list", message),
        Error::Io { .. } => Failure::environment("io", message),
        _ => Failure::operation("policy_refused", message),
    };
    failure.hint = hint;
    failure
}

pub(crate) fn block(out: &mut Out, plugins_dir: Option<&Path>, args: &BlockArgs) -> CmdResult {
    let mut policy = store(plugins_dir)?;
    if args.list {
        return Ok(list(out, policy.deny_lists()));
    }
    let first = args.first.as_deref().unwrap_or_default();
    let (kind, value) = entry_of(plugins_dir, first, args.second.as_deref())?;
    let entry = DenyEntry::new(kind, &value, args.reason.clone()).map_err(failure)?;
    let added = policy.block(entry.clone()).map_err(failure)?;
    let human = if added {
        format!(
            "blocked {entry}: matching bundles are refused at install and update, and stopped in every live host on the store"
        )
    } else {
        format!("{entry} was already blocked (its reason is updated)")
    };
    Ok(out.success(json!({"blocked": entry, "added": added}), &human))
}

pub(crate) fn unblock(out: &mut Out, plugins_dir: Option<&Path>, args: &UnblockArgs) -> CmdResult {
    let mut policy = store(plugins_dir)?;
    let (kind, value) = entry_of(plugins_dir, &args.first, args.second.as_deref())?;
    let removed = policy.unblock(kind, &value).map_err(failure)?;
    let human = format!(
        "unblocked {removed}: matching bundles may be installed, and load again as their trust and enablement say"
    );
    Ok(out.success(json!({"unblocked": removed}), &human))
}

fn list(out: &mut Out, lists: &DenyLists) -> std::process::ExitCode {
    let entries = lists.entries();
    let allow = lists.allow();
    let mut human = String::new();
    if entries.is_empty() {
        human.push_str("deny list: empty\n");
    }
    for found in &entries {
        let reason = found.entry.reason.as_deref().unwrap_or("");
        human.push_str(
            format!(
                "{:<8} {:<10} {} {reason}",
                found.origin, found.entry.kind, found.entry.value
            )
            .trim_end(),
        );
        human.push('\n');
    }
    for (label, list) in [
        ("catalogs", &allow.catalogs),
        ("git hosts", &allow.git_hosts),
        ("npm scopes", &allow.npm_scopes),
    ] {
        if let Some(list) = list {
            human.push_str(&format!("allowed {label} (managed): {}\n", list.join(", ")));
        }
    }
    for problem in lists.problems() {
        human.push_str(&format!("warning: {problem}\n"));
    }
    let result = json!({
        "deny": entries,
        "allow": allow,
        "managedPolicy": managed_policy(),
        "problems": lists.problems().iter().map(ToString::to_string).collect::<Vec<_>>(),
    });
    out.success(result, human.trim_end())
}
