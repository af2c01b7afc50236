//! Unit tests of the crate's small pure pieces.

use crate::error::{ErrorKind, HostError};

#[test]
fn every_error_kind_has_one_snake_case_name_that_round_trips() {
    let mut seen = std::collections::BTreeSet::new();
    for &kind in ErrorKind::ALL {
        let name = kind.as_str();
        assert!(
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{name}"
        );
        assert!(seen.insert(name), "`{name}` is used twice");
        assert_eq!(ErrorKind::from_name(name), Some(kind));
        let json = serde_json::to_value(kind).unwrap();
        assert_eq!(json, serde_json::Value::String(name.to_owned()));
        assert_eq!(serde_json::from_value::<ErrorKind>(json).unwrap(), kind);
        assert_eq!(kind.to_string(), name);
    }
    assert_eq!(ErrorKind::from_name("no_such_kind"), None);
    assert!(serde_json::from_str::<ErrorKind>(r#""no_such_kind""#).is_err());
}

#[test]
fn kernel_failures_keep_their_kind_their_remote_error_and_the_kernel_error_as_source() {
    let kernel = c2_kernel::Error::remote_failure(
        "command_failed",
        "quota used up",
        c2_kernel::RemoteError::new(-32050, Some(serde_json::json!({"retryAfter": 30}))),
    );
    let error = HostError::from(kernel.clone());
    assert_eq!(error.kind(), ErrorKind::CommandFailed);
    let plugin = error.plugin_error().unwrap();
    assert_eq!(plugin.code, -32050);
    assert_eq!(plugin.data, Some(serde_json::json!({"retryAfter": 30})));
    let source = std::error::Error::source(&error).unwrap();
    assert_eq!(source.downcast_ref::<c2_kernel::Error>(), Some(&kernel));
    // A host error raised through the kernel keeps its kind and hint, found by downcast; a
    // kind string is never read back, so a module's own kind, even one that spells a host
    // kind, is command_failed.
    let timeout = HostError::from(
        HostError::new(ErrorKind::HandshakeTimeout, "slow")
            .with_hint("wait")
            .into_kernel(),
    );
    assert_eq!(timeout.kind(), ErrorKind::HandshakeTimeout);
    assert_eq!(timeout.to_string(), "slow");
    assert_eq!(timeout.hint(), Some("wait"));
    let spelt = HostError::from(c2_kernel::Error::failure("handshake_timeout", "slow"));
    assert_eq!(spelt.kind(), ErrorKind::CommandFailed);
    let own = HostError::from(c2_kernel::Error::failure("my_module_kind", "no"));
    assert_eq!(own.kind(), ErrorKind::CommandFailed);
    assert_eq!(
        std::error::Error::source(&own)
            .and_then(|s| s.downcast_ref::<c2_kernel::Error>())
            .and_then(c2_kernel::Error::kind),
        Some("my_module_kind")
    );
    assert!(own.plugin_error().is_none());
}

#[test]
fn hints_are_kept_apart_from_messages() {
    let error = HostError::new(ErrorKind::NotTrusted, "x is not trusted").with_hint("trust x");
    assert_eq!(error.to_string(), "x is not trusted");
    assert_eq!(error.hint(), Some("trust x"));
    let missing = HostError::NotInstalled { id: "x".to_owned() };
    assert!(!missing.to_string().contains("c2-plugins"), "{missing}");
    assert!(
        missing
            .hint()
            .is_some_and(|h| h.contains("c2-plugins list"))
    );
    assert_eq!(HostError::new(ErrorKind::Io, "x").hint(), None);
}

#[test]
fn states_serialize_as_the_strings_they_always_were() {
    use crate::states::{BundleState, CommandState, CommandVisibility, UiOperation};
    fn round_trip<T>(all: &[T], expected: &[&str])
    where
        T: Copy + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
    {
        let shown: Vec<String> = all
            .iter()
            .map(|v| {
                serde_json::to_value(v)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(shown, expected);
        for (value, text) in all.iter().zip(expected) {
            let back: T = serde_json::from_value(serde_json::json!(text)).unwrap();
            assert_eq!(back, *value);
        }
    }
    round_trip(
        BundleState::ALL,
        &[
            "blocked",
            "content_changed",
            "untrusted",
            "disabled",
            "ready",
            "active",
            "pending",
            "failed",
        ],
    );
    round_trip(CommandVisibility::ALL, &["internal", "extension-public"]);
    round_trip(
        CommandState::ALL,
        &["dormant", "active", "failed", "built-in"],
    );
    round_trip(UiOperation::ALL, &["render", "invoke"]);
    assert_eq!(UiOperation::default(), UiOperation::Render);
    let unknown = serde_json::from_str::<UiOperation>(r#""explode""#).unwrap_err();
    assert!(unknown.to_string().contains("render, invoke"), "{unknown}");
    assert_eq!(BundleState::Active, "active");
}

#[test]
fn a_command_rows_realm_is_shown_as_global_or_its_project_path() {
    let row = crate::CommandRow {
        name: "x.y".to_owned(),
        owner: "bundle:x".to_owned(),
        realm: c2_kernel::Realm::Global,
        visibility: crate::CommandVisibility::ExtensionPublic,
        state: crate::CommandState::BuiltIn,
        title: "X".to_owned(),
        description: None,
    };
    // Its JSON shape is c2-relay's (`json::command_rows`), tested there.
    assert_eq!(
        (
            row.realm_label().as_str(),
            row.visibility.as_str(),
            row.state.as_str()
        ),
        ("global", "extension-public", "built-in")
    );
}

#[test]
fn a_policy_change_to_a_bundle_gone_meanwhile_is_not_installed_and_a_user_only_one_says_so() {
    let gone = HostError::from(c2_policy::Error::UnknownModule("bundle:x".to_owned()));
    assert_eq!(gone.kind(), ErrorKind::NotInstalled);
    let scope = HostError::from(c2_policy::Error::ProjectScopeNotSupported(
        "bundle:x".to_owned(),
    ));
    assert_eq!(scope.kind(), ErrorKind::ProjectScopeNotSupported);
    let other = HostError::from(c2_policy::Error::InheritIsProjectOnly);
    assert_eq!(other.kind(), ErrorKind::PolicyRefused);
}

/// This crate's `src/` and every `.rs` file under it.
fn source_files() -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    #[expect(
        clippy::disallowed_methods,
        reason = "the test lists this crate's own source files, not a bundle tree"
    )]
    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    (src, files)
}

/// The seam rule (seam.rs): the contributions are another crate (c2-contributions), so this
/// one has no `contributions` module, and no core file imports a built-in: the built-ins are
/// reached by registration (lib.rs's `WIRING`) alone.
#[test]
fn builtins_are_reached_by_registration_and_contributions_live_in_their_own_crate() {
    let (src, files) = source_files();
    let mut problems = Vec::new();
    for path in files {
        let relative = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let top = relative.split(['/', '\\']).next().unwrap_or_default();
        if top == "contributions" || top == "contributions.rs" {
            problems.push(format!(
                "{relative}: contributions belong in c2-contributions"
            ));
        }
        // Spelt in two halves so that this file passes its own check.
        let builtins = format!("crate::{}", "builtins");
        if top != "builtins" && relative != "lib.rs" && text.contains(&builtins) {
            problems.push(format!("core file {relative} mentions {builtins}"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A host failure crosses the kernel typed ([`HostError::into_kernel`]): no code of this crate
/// (tests aside) raises a kernel failure from a kind string, which the caller could only read
/// back as text.
#[test]
fn host_code_raises_kernel_failures_typed_never_by_kind_string() {
    let (_, files) = source_files();
    let mut problems = Vec::new();
    for path in files {
        if path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for call in ["Error::failure(", "remote_failure("] {
            if code.contains(call) {
                problems.push(format!("{} calls {call}", path.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_source_error_stays_typed_with_its_kind_message_and_hint() {
    let error = HostError::from(c2_sources::SourceError::Git("clone failed".to_owned()));
    assert!(
        matches!(
            &error,
            HostError::Source {
                error: c2_sources::SourceError::Git(_),
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(error.kind(), ErrorKind::GitFailed);
    assert_eq!(error.to_string(), "git: clone failed");
    assert!(!error.is_environment());
    let source = std::error::Error::source(&error).unwrap();
    assert!(source.is::<c2_sources::SourceError>());
    // Raised through the kernel, it keeps its kind.
    let through = HostError::from(error.into_kernel());
    assert_eq!(through.kind(), ErrorKind::GitFailed);
}

#[test]
fn an_invalid_component_is_a_host_error_of_its_kind() {
    let error = HostError::from(crate::ComponentRef::parse("mcp-server:").unwrap_err());
    assert_eq!(error.kind(), ErrorKind::InvalidComponent);
}

#[test]
fn a_long_log_message_is_cut_on_a_character_boundary_with_a_marker() {
    assert!(matches!(
        crate::runtime::cut_log_message("short", 10),
        std::borrow::Cow::Borrowed("short")
    ));
    // "é" is two bytes: a cut at 3 bytes falls inside the second one and backs off.
    let cut = crate::runtime::cut_log_message("éé-tail", 3);
    assert_eq!(
        cut,
        "é [… 7 more bytes cut: log message longer than 3 bytes]"
    );
}

#[test]
fn an_error_rendered_at_its_exact_length_reads_like_to_string() {
    let error = c2_kernel::Error::failure("kind", "x".repeat(1000));
    let text = crate::runtime::display_exact(&error);
    assert_eq!(text, error.to_string());
    assert_eq!(text.capacity(), text.len());
}
